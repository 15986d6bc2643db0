#!/usr/bin/env bash
# Installs the system packages the test suite needs (Debian), when they are missing.
# Today the suite needs only Node.js 20+ and git; later suites add PostgreSQL, MariaDB and Chromium here.
set -euo pipefail
need=()
command -v git >/dev/null 2>&1 || need+=(git)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi
node -e 'const [maj,min]=process.versions.node.split(".").map(Number); if (maj<20||(maj===20&&min<19)) { console.error("dp needs Node.js 20.19 or newer, found "+process.version); process.exit(1) }'
