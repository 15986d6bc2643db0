-- One row per customer: contact details, number of orders, lifetime value
-- and first and last order dates (returned orders left out).
-- @config materialized=table, schema=marts
-- @assert row_count > 0
-- @assert unique(customer_id)
WITH order_totals AS (
    SELECT
        customer_id,
        count(*) AS order_count,
        sum(amount) AS lifetime_value,
        min(order_date) AS first_order_date,
        max(order_date) AS last_order_date
    FROM staging.stg_orders
    WHERE status <> 'returned'
    GROUP BY customer_id
)
SELECT
    c.customer_id,
    c.full_name,
    c.email,
    c.country,
    coalesce(t.order_count, 0) AS order_count,
    coalesce(t.lifetime_value, 0) AS lifetime_value,
    t.first_order_date,
    t.last_order_date
FROM staging.stg_customers AS c
LEFT JOIN order_totals AS t ON c.customer_id = t.customer_id
