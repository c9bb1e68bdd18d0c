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

# The request mixes for wrk, $work/mixed.lua (70% people, 20% allowed crawlers, 10% crawlers
# robots.txt refuses everything) and $work/forward.lua (the same without the refused ones).
write_mixes() {
cat > "$work/mixed.lua" <<'EOF'
local people = {
  "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
}
local allowed = {
  "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
  "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
}
local blocked = {
  "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
  "CCBot/2.0 (https://commoncrawl.org/faq/)",
}
local n, p, a, b = 0, 0, 0, 0
request = function()
  n = n + 1
  local slot = n % 10
  local ua
  if slot < 7 then p = p + 1; ua = people[p % #people + 1]
  elseif slot < 9 then a = a + 1; ua = allowed[a % #allowed + 1]
  else b = b + 1; ua = blocked[b % #blocked + 1] end
  local path = "/blog/post-" .. (n % 50 + 1) .. ".html"
  return wrk.format("GET", path, { ["User-Agent"] = ua })
end
EOF
sed 's/if slot < 7 then/if slot < 8 then/; s/elseif slot < 9 then/elseif slot < 10 then/' "$work/mixed.lua" > "$work/forward.lua"
}
