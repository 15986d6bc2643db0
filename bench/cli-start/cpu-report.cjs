// Preloaded (node --require) into both processes the CLI start bench compares: on exit, writes
// the process's own CPU time (user + system, µs) to the file DP_BENCH_CPU_FILE names.
'use strict';
const fs = require('node:fs');
process.on('exit', () => {
  const { user, system } = process.cpuUsage();
  fs.writeFileSync(process.env.DP_BENCH_CPU_FILE, JSON.stringify({ user, system }));
});
