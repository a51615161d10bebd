-- Stage, after the screen: replace each trace's tenant id by a salted hash (the same as
-- privacy.tenant_hash), in traces.tenant, in metadata and extra fields named like a tenant id
-- (tenant_id, tenant_id_hash, tenant), and wherever the raw id appears in event content.
-- Parameters: $salt (VARCHAR): the tenant salt.
CREATE OR REPLACE TEMP TABLE tenant_hashes AS
SELECT trace_id, tenant AS raw, 'tenant-' || substr(sha256($salt || ':' || tenant), 1, 16) AS hashed
FROM traces WHERE tenant IS NOT NULL AND tenant <> '';

CREATE OR REPLACE TEMP MACRO lw_hide_tenant(x, h) AS
    CASE WHEN x IS NOT NULL AND json_type(x) = 'OBJECT'
              AND len(list_intersect(json_keys(x), ['tenant_id', 'tenant_id_hash', 'tenant'])) > 0
         THEN json_merge_patch(x, json_object(
                  'tenant_id', CASE WHEN json_exists(x, '$.tenant_id') THEN h END,
                  'tenant_id_hash', CASE WHEN json_exists(x, '$.tenant_id_hash') THEN h END,
                  'tenant', CASE WHEN json_exists(x, '$.tenant') THEN h END))
         ELSE x END;

-- Could this JSON text have a tenant key? A key is spelt out, or escaped (\u0074enant): only those
-- events are rewritten, since an update rewrites every row it touches.
CREATE OR REPLACE TEMP MACRO lw_may_name_tenant(x) AS
    x IS NOT NULL AND (contains(CAST(x AS VARCHAR), 'tenant') OR contains(CAST(x AS VARCHAR), '\u'));

UPDATE events SET content = replace(content, h.raw, h.hashed),
                  metadata = lw_hide_tenant(metadata, h.hashed),
                  extra = lw_hide_tenant(extra, h.hashed)
FROM tenant_hashes h
WHERE events.trace_id = h.trace_id
  AND (contains(events.content, h.raw) OR lw_may_name_tenant(events.metadata) OR lw_may_name_tenant(events.extra));

UPDATE traces SET tenant = h.hashed,
                  metadata = lw_hide_tenant(metadata, h.hashed),
                  extra = lw_hide_tenant(extra, h.hashed)
FROM tenant_hashes h WHERE traces.trace_id = h.trace_id;

DROP TABLE tenant_hashes;
DROP MACRO lw_may_name_tenant;
