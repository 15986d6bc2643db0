-- Payments with typed amounts and payment dates.
-- @config materialized=view, schema=staging
-- @assert no_nulls(order_id)
SELECT
    payment_id,
    order_id,
    payment_method,
    CAST(amount AS DECIMAL(10, 2)) AS amount,
    CAST(paid_at AS DATE) AS paid_at
FROM seeds.payments
