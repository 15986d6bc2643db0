-- Orders with typed dates and amounts.
-- @config materialized=view, schema=staging
-- @assert unique(order_id)
-- @assert accepted_values(status, ['completed', 'shipped', 'returned', 'pending'])
SELECT
    order_id,
    customer_id,
    CAST(order_date AS DATE) AS order_date,
    status,
    CAST(amount AS DECIMAL(10, 2)) AS amount
FROM seeds.orders
