-- Forget, first: the traces a request names, by id (stored or quarantined), by tenant (the hash the
-- store keeps) or by source, into the temp table forget_ids; returns how many.
-- Parameters: $trace_ids, $tenants, $sources (VARCHAR[]): what the request names (each may be empty).
CREATE OR REPLACE TEMP TABLE forget_ids AS
SELECT trace_id, 'trace' AS asked_by FROM traces WHERE list_contains($trace_ids::VARCHAR[], trace_id)
UNION SELECT trace_id, 'trace' FROM quarantine WHERE list_contains($trace_ids::VARCHAR[], trace_id)
UNION SELECT trace_id, 'tenant' FROM traces WHERE list_contains($tenants::VARCHAR[], tenant)
UNION SELECT trace_id, 'tenant' FROM sealed_traces WHERE list_contains($tenants::VARCHAR[], tenant)
UNION SELECT trace_id, 'source' FROM traces WHERE list_contains($sources::VARCHAR[], source);

SELECT count(DISTINCT trace_id) FROM forget_ids;
