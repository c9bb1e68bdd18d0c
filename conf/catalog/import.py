#!/usr/bin/env python3
"""Regenerates conf/catalog/bots-imported.yaml, the imported part of crawlgate's crawler catalog.

Sources (both MIT-licensed; their licences are in this folder):
  - ai-robots-txt/ai.robots.txt, robots.json: AI crawlers, with operator and function;
  - monperrus/crawler-user-agents, crawler-user-agents.json: crawlers with real User-Agent
    instances and tags.

Usage, with a git checkout (or a bare git directory) of each:

    conf/catalog/import.py --ai-robots PATH --crawler-user-agents PATH [--out conf/catalog/bots-imported.yaml]

Each source entry becomes a catalog entry when a product token can be read from it: for
crawler-user-agents, the run of [A-Za-z_-] where the entry's own pattern matches, agreed on by
most of its instances; for ai.robots.txt, the leading run of the name. A token is left out when
it is not a crawler's own name: browser vocabulary (crawlgate's BROWSER_VOCABULARY, read from
src/agent/mod.rs), a crawler word alone, or a common word or brand that people's browsers and apps
carry too (STOP_WORDS below, each with its reason). conf/bots.yaml wins over every entry here
(crawlgate merges the files at load), so this script never needs to know the curated file.
"""

import argparse
import json
import pathlib
import re
import subprocess
import sys
from collections import Counter
from urllib.parse import urlparse

ROOT = pathlib.Path(__file__).resolve().parents[2]

TOKEN_RUN = re.compile(r"[A-Za-z_-]+")
# What a product name may hold after its token (MJ12bot, archive.org_bot).
NAME_TAIL = re.compile(r"[A-Za-z0-9._-]*")
# A URL or a host in a header: a crawler's documentation, not its name.
URL = re.compile(r"(?:https?://|www\.)[^\s;)]*|[A-Za-z0-9.-]+\.(?:com|org|net|html?|php)\b[^\s;)]*", re.I)
# What a catalog name may hold (crawlgate checks the same).
NAME_CHARS = r"[A-Za-z0-9 ._/!:+-]+"

# Words that are not one crawler's name. Each would turn people's headers, or every crawler
# that mentions it, into one crawler.
STOP_WORDS = {
    # crawler words alone: crawlgate's generic signals already read them
    "bot", "bots", "crawler", "crawl", "spider", "scraper", "robot", "agent", "user-agent",
    # URL and address parts
    "http", "https", "www", "com", "org", "net", "html", "htm", "php", "mailto", "info",
    # ordinary words that products and people's apps use
    "the", "and", "for", "with", "client", "service", "app", "api", "sdk", "web", "site",
    "link", "check", "checker", "fetch", "fetcher", "monitor", "preview", "search", "code",
    "cursor", "operator", "terra", "library", "research", "test", "tool", "data", "feed",
    "reader", "news", "image", "images", "video", "media", "mobile", "desktop", "help",
    # brands whose browsers or apps send the bare word (the crawlers have longer tokens)
    "google", "amazon", "apple", "microsoft", "meta", "facebook", "yahoo", "yandex", "baidu",
    "openai", "chatgpt", "claude", "mozilla", "samsung", "huawei", "opera", "brave",
    "snapchat", "instagram", "pinterest", "twitter", "tumblr", "outlook", "electron",
}

# What a site's own operator sets up, whatever the list's tag says (crawler-user-agents tags
# Stripe's and Shopify's webhooks `seo`): a webhook, callback or payment notification sender
# by its name or its documentation, or a verification of the site by its name. These are
# `site-service`, counted rather than judged unless a site says otherwise.
SITE_SERVICE_NAME = re.compile(r"webhook|hook$|callback|verification|verify$", re.I)
SITE_SERVICE_DOCS = re.compile(r"webhook|callback|/ipn\b", re.I)

# A mail or image proxy fetches for the person who opens a message or a page, whatever the
# list's tag says (crawler-user-agents tags Gmail's `social-preview`): `proxy`, counted rather
# than judged unless a site says otherwise.
PROXY_NAME = re.compile(r"(?:image|img|mail)-?proxy", re.I)

# crawler-user-agents tags, in the order that decides an entry with several.
TAG_CATEGORIES = [
    ("ai-crawler", "ai-training"),
    ("search-engine", "search"),
    ("seo", "seo"),
    ("social-preview", "social"),
    ("feed-reader", "feed"),
    ("monitoring", "monitoring"),
    ("archiver", "archiver"),
    ("scanner", "scanner"),
    ("advertising", "other"),
    ("http-library", "http-library"),
    ("browser-automation", "http-library"),
    ("academic", "other"),
]


def browser_vocabulary():
    """crawlgate's BROWSER_VOCABULARY, from src/agent/mod.rs: one list for both."""
    text = (ROOT / "src" / "agent" / "mod.rs").read_text()
    block = re.search(r"BROWSER_VOCABULARY: &\[&str\] = &\[(.*?)\];", text, re.S)
    if not block:
        sys.exit("import.py: BROWSER_VOCABULARY not found in src/agent/mod.rs")
    return {word.lower() for word in re.findall(r'"([^"]+)"', block.group(1))}


def git_file(repo, path):
    """A file of a checkout or bare git directory at HEAD, and the commit."""
    repo = pathlib.Path(repo)
    git_dir = repo / ".git" if (repo / ".git").exists() else repo
    def git(*args):
        return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True,
                              capture_output=True, text=True).stdout
    return git("show", f"HEAD:{path}"), git("rev-parse", "HEAD").strip()


def acceptable(token, vocabulary):
    lower = token.lower()
    return (len(token) >= 3 and lower not in STOP_WORDS and lower not in vocabulary
            and not lower.startswith("-") and not lower.endswith("-"))


def name_of(token, tail):
    """The product name for a token followed by `tail`: the token, unless the tail goes on with
    letters (MJ12bot, archive.org_bot; not a version such as binlar_2.6.3)."""
    tail = re.sub(r"[._-]?v?\d+(?:\.\d+)*$", "", tail).rstrip(" .-_/;:,")
    if not re.search(r"[A-Za-z]", tail):
        return token
    return token + tail


def literal_name(pattern):
    """The text a crawler-user-agents pattern matches when it is a plain literal
    (`Googlebot\\/`, `Tiny Tiny RSS`), else None."""
    text = pattern[1:] if pattern.startswith("^") else pattern
    text = re.sub(r"\\([/.\- :;!@#&=,_~%])", lambda m: m.group(1), text)
    if any(c in "[](){}*+?|^$\\" for c in text):
        return None
    return text.strip(" /;:,")


def product_at(header, match, urls):
    """The product a pattern's match names in a header: from the start of the token run it
    starts in to the end of the run it ends in (`findlink` matches inside `findlinks`; `Tiny Tiny
    RSS` spans three runs), if that run begins a name (no letter or digit just before it) and
    lies outside any URL."""
    start, end = match.start(), max(match.end(), match.start() + 1)
    while start < end and not TOKEN_RUN.match(header[start]):
        start += 1
    if start >= end or any(a <= start < b for a, b in urls):
        return None
    while start > 0 and TOKEN_RUN.match(header[start - 1]):
        start -= 1
    if start > 0 and header[start - 1].isalnum():
        return None  # "360Spider": a name that starts with a digit has no product token
    while end < len(header) and (header[end].isalnum() or header[end] in "._-"):
        end += 1
    text = header[start:end].split("/")[0]  # a version follows "/"
    token = TOKEN_RUN.match(text).group()
    if token.endswith("-") and text[len(token):][:1].isdigit():
        token = token[:-1]  # "Wordup-1": a hyphen before a digit starts a version, as "/" does
    return name_of(token, text[len(token):])


def name_from_instances(pattern, instances):
    """The product a pattern names in most of its instances."""
    found = Counter()
    for header in instances:
        urls = [m.span() for m in URL.finditer(header)]
        for match in pattern.finditer(header):
            product = product_at(header, match, urls)
            if product:
                found[product] += 1
                break
    if not found:
        return None
    product, count = found.most_common(1)[0]
    if count * 2 < len(instances):
        return None  # a generic pattern: its instances name many crawlers
    return product


def from_crawler_user_agents(entries, vocabulary):
    out = []
    for entry in entries:
        instances = entry.get("instances", [])
        name = name_from_instances(re.compile(entry["pattern"]), instances)
        if name is None and not instances:
            name = literal_name(entry["pattern"])
        if not name or not TOKEN_RUN.match(name):
            continue
        token = TOKEN_RUN.match(name).group()
        if not acceptable(token, vocabulary) or not re.fullmatch(NAME_CHARS, name):
            continue
        tags = entry.get("tags", [])
        category = next((c for tag, c in TAG_CATEGORIES if tag in tags), "other")
        url = entry.get("url")
        if SITE_SERVICE_NAME.search(name) or SITE_SERVICE_DOCS.search(url or ""):
            category = "site-service"
        elif PROXY_NAME.search(name):
            category = "proxy"
        host = urlparse(url).hostname if url else None
        operator = host.removeprefix("www.") if host else "unknown"
        out.append({
            "token": token,
            "name": name if name != token else None,
            "operator": operator,
            "category": category,
            "docs": url,
            "source": "crawler-user-agents",
        })
    return out


def ai_category(function):
    lower = function.lower()
    if "search" in lower:
        return "ai-search"
    if "assistant" in lower or "agent" in lower:
        return "ai-assistant"
    return "ai-training"


def operator_of(text):
    link = re.match(r"\[([^\]]+)\]", text)
    if link:
        return link.group(1)
    if text.lower().startswith(("unclear", "unknown")):
        return "unknown"
    return re.split(r"[,.(]| that | to ", text)[0].strip() or "unknown"


def from_ai_robots(robots, vocabulary):
    out = []
    for key, info in robots.items():
        match = TOKEN_RUN.match(key)
        if not match:
            continue
        token = match.group()
        name = name_of(token, key[len(token):])
        if not acceptable(token, vocabulary) or not re.fullmatch(NAME_CHARS, name):
            continue
        docs = re.search(r"\((https?://[^)]+)\)", info.get("operator", ""))
        out.append({
            "token": token,
            "name": name if name != token else None,
            "operator": operator_of(info.get("operator", "")),
            "category": ai_category(info.get("function", "")),
            "docs": docs.group(1) if docs else None,
            "source": "ai.robots.txt",
        })
    return out


def yaml_string(text):
    return json.dumps(text, ensure_ascii=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ai-robots", required=True, help="ai-robots-txt/ai.robots.txt checkout")
    parser.add_argument("--crawler-user-agents", required=True,
                        help="monperrus/crawler-user-agents checkout")
    parser.add_argument("--out", default=str(ROOT / "conf" / "catalog" / "bots-imported.yaml"))
    args = parser.parse_args()
    vocabulary = browser_vocabulary()
    robots_text, robots_commit = git_file(args.ai_robots, "robots.json")
    agents_text, agents_commit = git_file(args.crawler_user_agents, "crawler-user-agents.json")
    entries = (from_ai_robots(json.loads(robots_text), vocabulary)
               + from_crawler_user_agents(json.loads(agents_text), vocabulary))
    seen = set()
    lines = [
        "# crawlgate crawler catalog: imported entries. GENERATED by conf/catalog/import.py;",
        "# do not edit: change conf/bots.yaml (whose entries win over these) or the script.",
        "#",
        "# Sources, both under the MIT licence (conf/catalog/LICENSE-*):",
        f"#   ai-robots-txt/ai.robots.txt robots.json, commit {robots_commit}",
        "#     Copyright (c) 2024 ai.robots.txt",
        f"#   monperrus/crawler-user-agents crawler-user-agents.json, commit {agents_commit}",
        "#     Copyright (c) 2017 Martin Monperrus",
        "# Schema: as conf/bots.yaml; `source` names the list an entry comes from. Every entry",
        "# matches only where it names a product (`matches: product`): these names are less",
        "# vetted than the curated ones.",
        "bots:",
    ]
    for entry in entries:
        lower = entry["token"].lower()
        if lower in seen:
            continue
        seen.add(lower)
        lines.append(f"  - token: {yaml_string(entry['token'])}")
        if entry["name"]:
            lines.append(f"    name: {yaml_string(entry['name'])}")
        lines.append(f"    operator: {yaml_string(entry['operator'])}")
        lines.append(f"    category: {entry['category']}")
        lines.append("    matches: product")
        if entry["docs"]:
            lines.append(f"    docs: {yaml_string(entry['docs'])}")
        lines.append(f"    source: {entry['source']}")
    pathlib.Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"import.py: {len(seen)} entries written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
