/**
 * The quality plugin's public contract: its service (contracts, assertions, profiles). Its
 * checks reach `dp check` through the models plugin's `models.checks` extension point.
 */
import type { Caller } from './auth.js';
import type { AssertionOutcome, ContractRunResult } from './models.js';
import { createServiceRef } from './refs.js';

/** A contract as written in `contracts/*.yml` (SPEC "Contract"), with the file that defines it. */
export interface ContractDefinition {
  name: string;
  model: string;
  description: string;
  severity: 'error' | 'warn';
  assertions: string[];
  file: string;
}

export interface QualityService {
  /** The contracts of `contracts/*.yml` without running them, and what is wrong with the files that did not load. */
  contracts(): { contracts: ContractDefinition[]; errors: Array<{ file: string; index?: number; reason: string }> };
  /** Evaluates assertion expressions against a relation (`schema.table`). */
  evaluateAssertions(relation: string, expressions: string[]): Promise<AssertionOutcome[]>;
  /** Runs contracts, optionally filtered by contract name or model. */
  runContracts(filter?: string): Promise<ContractRunResult>;
  /** Profile of one relation; sample values go through the guarded query runner (masked). */
  profile(schema: string, table: string, caller: Caller): Promise<Record<string, unknown>>;
}

export const QUALITY_SERVICE = createServiceRef<QualityService>('quality');
