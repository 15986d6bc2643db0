/** `dp jobs run` and `dp jobs list` on a copy of examples/shop (the CLI in this process). */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { closeInProcessClis, copyShop, makeProject, runInProcess } from '../../helpers.js';

describe('dp jobs', () => {
  let root: string;
  before(() => {
    root = copyShop();
  });
  after(closeInProcessClis);

  it('runs a stream, printing each step and model as it happens', async () => {
    const r = await runInProcess(['jobs', 'run', 'daily', '--project', root]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const lines = r.stdout.split('\n');
    const at = (re: RegExp) => {
      const i = lines.findIndex((l) => re.test(l));
      assert.ok(i >= 0, `${re} in\n${r.stdout}`);
      return i;
    };
    const order = [
      at(/^stream daily: 3 steps$/),
      at(/^\[1\/3\] ingest \[events\]$/),
      at(/^ {4}ingest\/events\.ts: loaded 100 events$/),
      at(/^\[1\/3\] ingest success in \d+ ms$/),
      at(/^\[2\/3\] seed \[all\]$/),
      at(/^\[3\/3\] transform \[all\]$/),
      at(/^ {4}staging\.stg_orders \.\.\.$/),
      at(/^ {4}staging\.stg_orders built \(\d+(\.\d+)? ms\)$/),
      at(/^\[3\/3\] transform success in \d+ ms$/),
      at(/^stream daily success in \d+ ms$/),
    ];
    assert.deepEqual(order, [...order].sort((a, b) => a - b));
  });

  it('lists the streams, and refuses an unknown one', async () => {
    const list = await runInProcess(['jobs', 'list', '--project', root]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /daily\s+0 6 \* \* \*\s+ingest\[events\] -> seed\[all\] -> transform\[all\]/);
    const unknown = await runInProcess(['jobs', 'run', 'nope', '--project', root]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /No stream 'nope' in project\.yml \(streams: daily, events_hourly\)/);
  });

  it('reports bad schedules and targets in dp validate, with their lines', async () => {
    const project = makeProject({
      'project.yml': 'name: v\ndatabase:\n  path: v.duckdb\nstreams:\n  nightly:\n    schedule: "0 25 * * *"\n    steps:\n      - ingest: [missing]\n      - transform: [all]\n',
    });
    const r = await runInProcess(['validate', '--project', project, '--json']);
    assert.equal(r.code, 1, r.stderr + r.stdout);
    const report = JSON.parse(r.stdout) as { problems: Array<{ source: string; file: string; line?: number; message: string }> };
    const mine = report.problems.filter((p) => p.source === 'streams');
    assert.deepEqual(
      mine.map((p) => [p.file, p.line, p.message.replace(/: .*$/, '')]),
      [
        ['project.yml', 6, 'streams.nightly.schedule'],
        ['project.yml', 8, 'streams.nightly.steps[0] (ingest)'],
      ],
    );
    assert.match(mine[0].message, /'0 25 \* \* \*' is not a valid cron expression/);
    assert.match(mine[1].message, /no script 'missing' in ingest\//);
  });
});
