#!/usr/bin/env bash
# Installs the system packages the test suite needs (Debian), when they are missing:
# git, Chromium (headless UI tests through playwright-core; never a downloaded browser) and its
# old headless shell (half the CPU per page; test/ui/browser.ts uses it when installed),
# PostgreSQL and MariaDB servers (connector tests start their own instances on 127.0.0.1),
# ClickHouse server and client with ZooKeeper (the ClickHouse target's tests start a 2-shard cluster).
set -euo pipefail
need=()
command -v git >/dev/null 2>&1 || need+=(git)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ -x /usr/lib/chromium/chromium-headless-shell ] || need+=(chromium-headless-shell)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v mariadbd >/dev/null 2>&1 || need+=(mariadb-server)
command -v clickhouse-server >/dev/null 2>&1 || need+=(clickhouse-server)
command -v clickhouse-client >/dev/null 2>&1 || need+=(clickhouse-client)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
node -e 'const [maj,min]=process.versions.node.split(".").map(Number); if (maj<20||(maj===20&&min<19)) { console.error("dp needs Node.js 20.19 or newer, found "+process.version); process.exit(1) }'
