-- Customers from the CRM export, with a full name, a lower-case email and a typed signup date.
-- @config materialized=view, schema=staging
-- @assert unique(customer_id)
-- @assert no_nulls(email)
SELECT
    customer_id,
    first_name,
    last_name,
    first_name || ' ' || last_name AS full_name,
    lower(email) AS email,
    phone,
    country,
    CAST(signup_date AS DATE) AS signup_date
FROM seeds.customers
