import fs from 'node:fs';
import path from 'node:path';
import dotenv from 'dotenv';
import { badRequest } from '../sdk/errors.js';
import type { SecretsStore } from '../sdk/plugin.js';
import { ENV_FILE } from './config.js';
import { writeFileAtomic } from './paths.js';

const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

function maskValue(value: string): string {
  if (value.length === 0) return '';
  return '*'.repeat(Math.min(8, Math.max(4, value.length)));
}

/** Serialises a value for .env: quoted when it holds anything dotenv would misread. */
function envValue(value: string): string {
  if (/^[A-Za-z0-9_./:@+-]*$/.test(value)) return value;
  if (!value.includes("'") && !value.includes('\n')) return `'${value}'`;
  return JSON.stringify(value);
}

/** The project's .env as a secret store; writes keep every other line and comment. */
export class EnvSecretsStore implements SecretsStore {
  constructor(
    private readonly root: string,
    private readonly onChange: (vars: Record<string, string>) => void,
  ) {}

  private file(): string {
    return path.join(this.root, ENV_FILE);
  }

  private read(): Record<string, string> {
    return fs.existsSync(this.file()) ? dotenv.parse(fs.readFileSync(this.file())) : {};
  }

  list(): Array<{ key: string; masked_value: string }> {
    return Object.entries(this.read())
      .map(([key, value]) => ({ key, masked_value: maskValue(value) }))
      .sort((a, b) => a.key.localeCompare(b.key));
  }

  get(key: string): string | undefined {
    return this.read()[key];
  }

  private validateKey(key: string): void {
    if (typeof key !== 'string' || !KEY.test(key)) {
      throw badRequest('invalid_secret_key', 'Secret keys are letters, digits and underscores, not starting with a digit', { field: 'key' });
    }
  }

  async set(key: string, value: string): Promise<void> {
    this.validateKey(key);
    if (typeof value !== 'string') throw badRequest('invalid_secret_value', "'value' must be a string", { field: 'value' });
    const lines = fs.existsSync(this.file()) ? fs.readFileSync(this.file(), 'utf8').split('\n') : [];
    const line = `${key}=${envValue(value)}`;
    const pattern = new RegExp(`^\\s*(export\\s+)?${key}\\s*=`);
    const at = lines.findIndex((l) => pattern.test(l));
    if (at >= 0) lines[at] = line;
    else {
      if (lines.length && lines[lines.length - 1] === '') lines.pop();
      lines.push(line, '');
    }
    writeFileAtomic(this.file(), lines.join('\n'));
    this.onChange(this.read());
  }

  async delete(key: string): Promise<boolean> {
    this.validateKey(key);
    if (!fs.existsSync(this.file())) return false;
    const lines = fs.readFileSync(this.file(), 'utf8').split('\n');
    const pattern = new RegExp(`^\\s*(export\\s+)?${key}\\s*=`);
    const kept = lines.filter((l) => !pattern.test(l));
    if (kept.length === lines.length) return false;
    writeFileAtomic(this.file(), kept.join('\n'));
    this.onChange(this.read());
    return true;
  }
}
