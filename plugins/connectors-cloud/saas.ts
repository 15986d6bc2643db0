/**
 * `payments`, `ecommerce`, `crm`: rest_api definitions preconfigured for the usual shape of
 * those SaaS APIs (a Stripe-like payments API, a Shopify-like shop admin API, a HubSpot-like CRM):
 * their resources, records path, pagination style and cursor field. The base URL is a parameter
 * (tests point it at a local fake; a self-hosted or regional endpoint works the same way).
 */
import type { ConnectorType } from '../../sdk/index.js';
import { paramInvalid, TIMEOUT_PARAM } from './net.js';
import { restConnectorType, type RestApiConfig, type RestResource } from './rest-api.js';

interface Preset {
  type: string;
  label: string;
  description: string;
  defaultUrl?: string;
  urlHelp: string;
  auth: { style: 'bearer' } | { style: 'header'; header: string };
  resources: RestResource[];
}

function presetParams(p: Preset): Record<string, unknown> {
  return {
    type: 'object',
    required: p.defaultUrl ? ['api_key'] : ['url', 'api_key'],
    properties: {
      url: { type: 'string', ...(p.defaultUrl ? { default: p.defaultUrl } : {}), description: p.urlHelp },
      api_key: { type: 'string', 'x-secret': true, description: p.auth.style === 'bearer' ? 'API key (sent as a bearer token)' : `Access token (sent in ${p.auth.header})` },
      resources: {
        type: 'array',
        items: { type: 'string', enum: p.resources.map((r) => r.name) },
        description: `Resources to offer (default all: ${p.resources.map((r) => r.name).join(', ')})`,
      },
      page_size: { type: 'integer', minimum: 1, maximum: 1000, description: 'Records per page (default the API’s usual maximum)' },
      timeout_ms: TIMEOUT_PARAM,
    },
    additionalProperties: false,
  };
}

function presetType(p: Preset): ConnectorType {
  const params = presetParams(p);
  return restConnectorType({
    type: p.type,
    label: p.label,
    description: p.description,
    params,
    toRest: (config): RestApiConfig => {
      const url = (config.url as string | undefined) ?? p.defaultUrl;
      if (!url) throw paramInvalid('url', 'is required');
      if (typeof config.api_key !== 'string' || config.api_key === '') throw paramInvalid('api_key', 'is required');
      const wanted = config.resources as string[] | undefined;
      for (const w of wanted ?? []) if (!p.resources.some((r) => r.name === w)) throw paramInvalid('resources', `'${w}' is not one of ${p.resources.map((r) => r.name).join(', ')}`);
      const pageSize = config.page_size as number | undefined;
      const resources = p.resources
        .filter((r) => !wanted?.length || wanted.includes(r.name))
        .map((r) => (pageSize && r.pagination && r.pagination.style !== 'none' ? { ...r, pagination: { ...r.pagination, page_size: pageSize } } : r));
      return {
        url,
        auth: p.auth.style,
        auth_header: p.auth.style === 'header' ? p.auth.header : undefined,
        token: config.api_key,
        resources,
        timeout_ms: config.timeout_ms as number | undefined,
      };
    },
  });
}

const stripeList = (name: string, path: string): RestResource => ({
  name,
  path,
  records_path: 'data',
  pagination: { style: 'cursor', cursor_param: 'starting_after', cursor_from_record: 'id', has_more_path: 'has_more', size_param: 'limit', page_size: 100 },
  incremental_param: 'created[gt]',
  cursor_field: 'created',
});

export const PAYMENTS_PRESET: Preset = {
  type: 'payments',
  label: 'Payments API',
  description: 'A Stripe-style payments API: customers, charges, invoices, refunds; cursor pagination (starting_after); incremental by created',
  defaultUrl: 'https://api.stripe.com',
  urlHelp: 'Base URL of the payments API',
  auth: { style: 'bearer' },
  resources: [stripeList('customers', '/v1/customers'), stripeList('charges', '/v1/charges'), stripeList('invoices', '/v1/invoices'), stripeList('refunds', '/v1/refunds')],
};

const shopList = (name: string): RestResource => ({
  name,
  path: `/admin/api/2024-01/${name}.json`,
  records_path: name,
  pagination: { style: 'link', size_param: 'limit', page_size: 250 },
  incremental_param: 'updated_at_min',
  cursor_field: 'updated_at',
  column_types: { total_price: 'DECIMAL(18,2)', price: 'DECIMAL(18,2)' },
});

export const ECOMMERCE_PRESET: Preset = {
  type: 'ecommerce',
  label: 'E-commerce admin API',
  description: 'A Shopify-style shop admin API: orders, products, customers; Link-header pagination; incremental by updated_at',
  urlHelp: 'Base URL of the shop (`https://<shop>.myshopify.com`)',
  auth: { style: 'header', header: 'X-Shopify-Access-Token' },
  resources: [shopList('orders'), shopList('products'), shopList('customers')],
};

const crmObjects = (name: string): RestResource => ({
  name,
  path: `/crm/v3/objects/${name}`,
  records_path: 'results',
  pagination: { style: 'cursor', cursor_param: 'after', next_cursor_path: 'paging.next.after', size_param: 'limit', page_size: 100 },
  cursor_field: 'updatedAt',
});

export const CRM_PRESET: Preset = {
  type: 'crm',
  label: 'CRM API',
  description: 'A HubSpot-style CRM API: contacts, companies, deals; cursor pagination (paging.next.after); incremental by updatedAt',
  defaultUrl: 'https://api.hubapi.com',
  urlHelp: 'Base URL of the CRM API',
  auth: { style: 'bearer' },
  resources: [crmObjects('contacts'), crmObjects('companies'), crmObjects('deals')],
};

export const paymentsType = presetType(PAYMENTS_PRESET);
export const ecommerceType = presetType(ECOMMERCE_PRESET);
export const crmType = presetType(CRM_PRESET);
