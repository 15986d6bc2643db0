/**
 * A local S3-compatible server (s3rver) on 127.0.0.1 for the object_storage tests, and a signed
 * PUT to fill it. s3rver runs in a child process with OpenSSL's legacy provider: it encrypts its
 * ListObjectsV2 continuation tokens with DES, which OpenSSL 3 only offers there. s3rver checks
 * only the access key id of a SigV4 request, so a proxy in front of it checks the signature:
 * it signs the request as received (method, path, query, signed headers) with the real secret
 * and answers 403 SignatureDoesNotMatch when the signatures differ, as S3 does.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import aws4 from 'aws4';
import { tempDir } from '../../../helpers.js';

export interface RunningS3 {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  /**
   * `modifiedAt` sets the object's Last-Modified (s3rver reads its stored file's mtime): S3 keeps
   * whole seconds, so a test moves it past a watermark instead of waiting for the next second.
   */
  put(bucket: string, key: string, body: Buffer | string, options?: { modifiedAt?: Date }): Promise<void>;
  stop(): Promise<void>;
}

export async function startS3(buckets: string[]): Promise<RunningS3> {
  const dir = tempDir('dp-cc-s3-');
  const s3rver = pathToFileURL(createRequire(import.meta.url).resolve('s3rver')).href;
  const code = `
    const { default: S3rver } = await import(${JSON.stringify(s3rver)});
    const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: ${JSON.stringify(dir)}, configureBuckets: ${JSON.stringify(buckets.map((name) => ({ name })))} });
    const { port } = await server.run();
    process.stdout.write('PORT ' + port + '\\n');
    process.on('SIGTERM', async () => { await server.close(); process.exit(0); });
  `;
  const child = spawn(process.execPath, ['--openssl-legacy-provider', '--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /PORT (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`s3rver exited with ${code}`)));
  });
  const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
  const proxy = http.createServer((req, res) => {
    const auth = String(req.headers.authorization ?? '');
    const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/\d{8}\/([^/]+)\/s3\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]+)$/.exec(auth);
    if (m && m[1] === credentials.accessKeyId) {
      const headers: Record<string, string> = {};
      for (const h of m[3]!.split(';')) if (h !== 'host') headers[h] = String(req.headers[h] ?? '');
      const expected = aws4.sign({ method: req.method, host: req.headers.host, path: req.url, service: 's3', region: m[2], headers }, credentials);
      const signature = /Signature=([0-9a-f]+)/.exec(String(expected.headers!.Authorization))![1];
      if (signature !== m[4]) {
        res.writeHead(403, { 'content-type': 'application/xml' });
        return void res.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided.</Message></Error>');
      }
    }
    const upstream = http.request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const proxyPort = (proxy.address() as AddressInfo).port;
  const endpoint = `http://127.0.0.1:${proxyPort}`;
  return {
    endpoint,
    ...credentials,
    async put(bucket, key, body, options) {
      const data = typeof body === 'string' ? Buffer.from(body) : body;
      const encoded = key.split('/').map(encodeURIComponent).join('/');
      const signed = aws4.sign({ host: `127.0.0.1:${proxyPort}`, path: `/${bucket}/${encoded}`, method: 'PUT', service: 's3', region: 'us-east-1', body: data, headers: { 'content-length': String(data.length) } }, credentials);
      const res = await fetch(`${endpoint}/${bucket}/${encoded}`, { method: 'PUT', headers: signed.headers as Record<string, string>, body: new Uint8Array(data) });
      if (!res.ok) throw new Error(`PUT ${key}: ${res.status} ${await res.text()}`);
      if (options?.modifiedAt) {
        const parts = key.split('/');
        const stored = path.join(dir, bucket, ...parts.slice(0, -1), `${parts.at(-1)}._S3rver_object`);
        fs.utimesSync(stored, options.modifiedAt, options.modifiedAt);
      }
    },
    async stop() {
      proxy.closeAllConnections();
      await new Promise((r) => proxy.close(r));
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
