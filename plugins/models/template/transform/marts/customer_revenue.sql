-- @config materialized=table, schema=marts
SELECT
    c.customer_id,
    c.name,
    count(o.order_id) AS paid_orders,
    coalesce(sum(o.amount), 0) AS revenue
FROM staging.stg_customers AS c
LEFT JOIN staging.stg_orders AS o
    ON o.customer_id = c.customer_id AND o.status = 'paid'
GROUP BY c.customer_id, c.name
