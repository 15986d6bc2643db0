/** The nine connector types this plugin contributes, in the order `dp connectors available` lists them. */
import type { ConnectorType } from '../../sdk/index.js';
import { objectStorageType } from './object-storage.js';
import { restApiType } from './rest-api.js';
import { crmType, ecommerceType, paymentsType } from './saas.js';
import { spreadsheetType } from './spreadsheet.js';
import { warehouseAType, warehouseBType } from './warehouse-arrow.js';
import { warehouseCType } from './warehouse-pg.js';

export const CLOUD_CONNECTOR_TYPES: readonly ConnectorType[] = [
  spreadsheetType,
  objectStorageType,
  restApiType,
  paymentsType,
  ecommerceType,
  crmType,
  warehouseAType,
  warehouseBType,
  warehouseCType,
];
