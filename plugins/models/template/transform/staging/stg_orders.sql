-- @config materialized=view, schema=staging
-- @assert unique(order_id)
SELECT
    order_id,
    customer_id,
    status,
    CAST(amount AS DECIMAL(10, 2)) AS amount,
    CAST(ordered_at AS DATE) AS ordered_at
FROM seeds.orders
