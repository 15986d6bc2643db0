/**
 * A WebSocket upgrade request on a raw socket, as a browser sends it (extra headers such as
 * Origin or Cookie are added as given): the tests see the plain HTTP refusal a route answers
 * before upgrading, or get the open socket.
 */
import crypto from 'node:crypto';
import net from 'node:net';
import type { Duplex } from 'node:stream';

/** Resolves with the HTTP status (101 when upgraded, then the socket stays open) or the status and body of the refusal. */
export function upgrade(baseUrl: string, urlPath: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; socket?: Duplex }> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const lines = [
      `GET ${urlPath} HTTP/1.1`,
      `Host: ${hostname}:${port}`,
      'Connection: Upgrade',
      'Upgrade: websocket',
      'Sec-WebSocket-Version: 13',
      `Sec-WebSocket-Key: ${crypto.randomBytes(16).toString('base64')}`,
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    ];
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0);
      if (status === 101) {
        socket.off('data', onData);
        return resolve({ status, body: '', socket });
      }
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(text)?.[1] ?? 0);
      if (text.length >= end + 4 + length) {
        socket.destroy();
        resolve({ status, body: text.slice(end + 4, end + 4 + length) });
      }
    };
    socket.on('data', onData);
    socket.on('error', reject);
    socket.write(lines.join('\r\n') + '\r\n\r\n');
  });
}
