-- @config materialized=view, schema=staging
-- @assert unique(customer_id)
SELECT
    customer_id,
    name,
    upper(country) AS country
FROM seeds.customers
