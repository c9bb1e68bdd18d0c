# Shared by benches/load.sh and the scripts beside this file; sourced from the repository's top
# folder, not run. Everything listens on loopback.

CORPUS=${CRAWLGATE_CORPUS:-../shared/corpus/real}
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
