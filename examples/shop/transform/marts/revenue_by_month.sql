-- Revenue and order count per month and payment method, from completed and
-- shipped orders only.
-- @config materialized=table, schema=marts
-- @assert row_count >= 1
-- @assert "sum(revenue) > 0"
SELECT
    date_trunc('month', o.order_date) AS month,
    p.payment_method,
    count(DISTINCT o.order_id) AS orders,
    sum(p.amount) AS revenue
FROM staging.stg_orders AS o
JOIN staging.stg_payments AS p ON p.order_id = o.order_id
WHERE o.status IN ('completed', 'shipped')
GROUP BY ALL
