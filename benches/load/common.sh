# Shared by benches/load.sh and the scripts beside this file; sourced from the repository's top
# folder, not run. Everything listens on loopback.

CORPUS=${CRAWLGATE_CORPUS:-../shared/corpus/real}
# With two CPUs or more, the proxy under test gets CPU 1 to itself and the load tool and the
# origin share CPU 0, so that the proxy's CPU time per request is not muddled by scheduling noise.
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ]; then
  PIN_PROXY=${PIN_PROXY:-"taskset -c 1"}; PIN_LOAD=${PIN_LOAD:-"taskset -c 0"}
else
  PIN_PROXY=${PIN_PROXY:-}; PIN_LOAD=${PIN_LOAD:-}
fi
# A real robots.txt of 1.9 MB, cut to 500 KiB by the scripts.
LARGE_SOURCE="$CORPUS/vladimir-buzuev-org__robots-top-1m__gobankingrates.com__robots.txt"

# Makes the work folder `$work` (/tmp/crawlgate-NAME.*) and, on exit, kills the processes whose
# pids are in `pids`, stops the nginx instances configured by `$work/*.conf` and removes the
# folder (kept with KEEP=1).
make_work() { # name
  work=$(mktemp -d "/tmp/crawlgate-$1.XXXXXX")
  chmod 755 "$work"   # nginx's workers run as an unprivileged user and must read the pages
  pids=()
  trap cleanup EXIT
}
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for conf in "$work"/*.conf; do
    [ -f "$conf" ] && nginx -c "$conf" -p "$work" -s quit 2>/dev/null || true
  done
  sleep 0.5
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Waits until something accepts connections on the port (TRIES tenths of a second at most).
wait_port() { # port [tries]
  for _ in $(seq 1 "${2:-100}"); do (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "port $1 never opened" >&2; exit 1
}

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# The site: 50 small static pages, $work/www/blog/post-N.html (and the folder $work/logs).
page='<!doctype html><html><head><title>page</title></head><body><p>A small static page served by the origin.</p></body></html>'
write_pages() {
  mkdir -p "$work/www/blog" "$work/logs"
  for i in $(seq 1 50); do echo "$page" > "$work/www/blog/post-$i.html"; done
}

# Starts the origin, nginx serving $work/www on the port (on PIN_LOAD's CPU), with the given
# lines added to its server block.
start_origin() { # port [server lines]
  cat > "$work/nginx-origin.conf" <<EOF
worker_processes 1;
pid $work/nginx-origin.pid;
error_log $work/logs/origin-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:$1;
    root $work/www;
    ${2:-}
  }
}
EOF
  $PIN_LOAD nginx -c "$work/nginx-origin.conf" -p "$work"
}

# Total utime+stime of processes and their children (nginx workers), in clock ticks.
cpu_ticks() { # pid...
  local total=0
  for pid in "$@" $(for p in "$@"; do pgrep -P "$p" || true; done); do
    [ -r "/proc/$pid/stat" ] || continue
    local fields; fields=$(sed 's/^.*) //' "/proc/$pid/stat")
    set -- $fields
    total=$((total + ${12} + ${13}))
  done
  echo "$total"
}
