-- Audit of the database: every text column (VARCHAR, JSON, VARCHAR[]) of its tables and of the view
-- `events` (the event files), as (table_name, column_name), each table's columns together.
SELECT table_name, column_name FROM information_schema.columns
WHERE table_schema = 'main' AND table_catalog = current_database()
  AND (data_type IN ('VARCHAR', 'JSON') OR data_type LIKE 'VARCHAR[]')
  AND table_name IN (SELECT table_name FROM information_schema.tables
                     WHERE table_schema = 'main' AND (table_type = 'BASE TABLE' OR table_name = 'events'))
ORDER BY table_name, column_name;
