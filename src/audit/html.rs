//! The report as one self-contained HTML page: inline CSS, charts drawn as inline SVG, and a few
//! lines of inline JavaScript to sort tables and rescale the bars. It loads nothing (its
//! Content-Security-Policy forbids it), so it opens from a file with no network, and every
//! string that came from a log is escaped.

use super::report::{thousands, CrawlerReport, Report};
use std::fmt::Write;

/// How many crawlers the bar chart shows (the table lists them all).
const CHART_CRAWLERS: usize = 30;

const STYLE: &str = r#"
:root { --allowed: #2f8f57; --disallowed: #d0443e; --ink: #1d2330; --muted: #667085; --line: #e4e7ec; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); margin: 0; background: #f7f8fa; }
main { max-width: 1100px; margin: 0 auto; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 32px 0 8px; }
p.sub { color: var(--muted); margin: 0 0 16px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 12px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
.card b { display: block; font-size: 20px; }
.card span { color: var(--muted); font-size: 12px; }
.panel { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px; overflow-x: auto; }
svg.chart { width: 100%; height: auto; }
td.t { white-space: nowrap; font-size: 12px; }
svg text { font: 12px system-ui, sans-serif; fill: var(--ink); }
svg .axis { stroke: var(--line); }
svg .a { fill: var(--allowed); }
svg .d { fill: var(--disallowed); }
.legend i { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 12px; border-radius: 2px; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { position: sticky; top: 0; background: #fff; cursor: pointer; user-select: none; white-space: nowrap; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
td.path { font-family: ui-monospace, Menlo, Consolas, monospace; word-break: break-all; }
.bad { color: var(--disallowed); font-weight: 600; }
.none { color: var(--muted); }
details { background: #fff; border: 1px solid var(--line); border-radius: 8px; margin: 6px 0; padding: 6px 10px; }
summary { cursor: pointer; }
button { font: inherit; border: 1px solid var(--line); background: #fff; border-radius: 6px; padding: 2px 10px; cursor: pointer; }
footer { color: var(--muted); margin: 32px 0 0; font-size: 12px; }
"#;

const SCRIPT: &str = r#"
(function () {
  function value(cell) {
    var v = cell.getAttribute('data-v');
    return v === null ? cell.textContent : parseFloat(v);
  }
  document.querySelectorAll('table.sortable').forEach(function (table) {
    table.querySelectorAll('th').forEach(function (th, index) {
      th.addEventListener('click', function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var descending = th.getAttribute('data-dir') !== 'desc';
        th.setAttribute('data-dir', descending ? 'desc' : 'asc');
        rows.sort(function (a, b) {
          var x = value(a.cells[index]), y = value(b.cells[index]);
          var order = (typeof x === 'number' && typeof y === 'number') ? x - y : String(x).localeCompare(String(y));
          return descending ? -order : order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
  var toggle = document.getElementById('scale');
  if (toggle) {
    toggle.addEventListener('click', function () {
      var share = toggle.getAttribute('data-mode') !== 'share';
      toggle.setAttribute('data-mode', share ? 'share' : 'requests');
      toggle.textContent = share ? 'Show requests' : 'Show shares';
      document.querySelectorAll('#bars g.bar').forEach(function (bar) {
        var a = parseFloat(bar.getAttribute('data-a')), d = parseFloat(bar.getAttribute('data-d'));
        var max = parseFloat(bar.getAttribute('data-max')), width = parseFloat(bar.getAttribute('data-w'));
        var total = a + d, scale = share ? (total ? width / total : 0) : width / max;
        var ra = bar.querySelector('rect.a'), rd = bar.querySelector('rect.d');
        ra.setAttribute('width', a * scale);
        rd.setAttribute('x', parseFloat(ra.getAttribute('x')) + a * scale);
        rd.setAttribute('width', d * scale);
      });
    });
  }
})();
"#;

/// Escapes text for HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => {
                let _ = write!(out, "&#xFFFD;");
            }
            c => out.push(c),
        }
    }
    out
}

fn pct(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

#[allow(clippy::cast_precision_loss)] // pixel geometry
fn px(value: u64, max: u64, width: f64) -> f64 {
    if max == 0 {
        0.0
    } else {
        value as f64 / max as f64 * width
    }
}

/// Renders the report as a page.
pub fn render(report: &Report) -> String {
    let mut page = String::with_capacity(64 * 1024);
    let title = format!("crawlgate audit: {}", report.robots.file);
    let _ = write!(
        page,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{}</title><style>{STYLE}</style></head><body><main>\n",
        escape(&title)
    );
    header(&mut page, report);
    bars(&mut page, report);
    timeline(&mut page, report);
    crawler_table(&mut page, report);
    operators(&mut page, report);
    paths(&mut page, report);
    rules(&mut page, report);
    skipped(&mut page, report);
    let _ = write!(
        page,
        "<footer>Made by <code>crawlgate audit</code> from {} input(s); the same classification and \
matcher as the crawlgate proxy.</footer>\n</main><script>{SCRIPT}</script></body></html>\n",
        report.inputs.len()
    );
    page
}

fn header(page: &mut String, report: &Report) {
    let span = match (&report.first_seen, &report.last_seen) {
        (Some(first), Some(last)) => format!("{} to {}", escape(first), escape(last)),
        _ => "no times in the logs".to_owned(),
    };
    let inputs: Vec<String> = report.inputs.iter().map(|i| escape(&i.file)).collect();
    let _ = write!(
        page,
        "<h1>What crawlers did</h1><p class=\"sub\">Access logs <b>{}</b> replayed against \
<b>{}</b> ({} groups, {} rules), {span}.</p>\n<div class=\"cards\">",
        inputs.join(", "),
        escape(&report.robots.file),
        report.robots.groups,
        report.robots.rules,
    );
    let share = if report.crawler_requests == 0 {
        0.0
    } else {
        report.disallowed as f64 / report.crawler_requests as f64
    };
    for (value, label) in [
        (thousands(report.lines), "lines read".to_owned()),
        (
            thousands(report.skipped),
            "malformed lines skipped".to_owned(),
        ),
        (thousands(report.people), "requests by people".to_owned()),
        (
            thousands(report.crawler_requests),
            format!("requests by {} crawlers", report.crawlers.len()),
        ),
        (
            thousands(report.disallowed),
            format!("disallowed by robots.txt ({})", pct(share)),
        ),
    ]
    .into_iter()
    .chain((report.against_preference > 0).then(|| {
        (
            thousands(report.against_preference),
            "allowed, but against a stated content-use preference".to_owned(),
        )
    })) {
        let _ = write!(
            page,
            "<div class=\"card\"><b>{value}</b><span>{}</span></div>",
            escape(&label)
        );
    }
    page.push_str("</div>\n");
}

fn bars(page: &mut String, report: &Report) {
    let shown: Vec<&CrawlerReport> = report.crawlers.iter().take(CHART_CRAWLERS).collect();
    if shown.is_empty() {
        return;
    }
    let (label_w, bar_w, row_h) = (190.0, 620.0, 22.0);
    let width = label_w + bar_w + 150.0;
    let height = row_h * shown.len() as f64 + 8.0;
    let max = shown.iter().map(|c| c.requests).max().unwrap_or(1).max(1);
    let _ = write!(
        page,
        "<h2>Allowed and disallowed requests per crawler</h2><p class=\"sub legend\">\
<i style=\"background:var(--allowed)\"></i>allowed<i style=\"background:var(--disallowed)\"></i>\
disallowed by robots.txt &nbsp; <button id=\"scale\" type=\"button\" data-mode=\"requests\">Show shares</button>\
{}</p><div class=\"panel\"><svg id=\"bars\" class=\"chart\" role=\"img\" aria-label=\"requests per crawler\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\">",
        if report.crawlers.len() > CHART_CRAWLERS {
            format!(" (the {CHART_CRAWLERS} busiest of {})", report.crawlers.len())
        } else {
            String::new()
        }
    );
    for (row, crawler) in shown.iter().enumerate() {
        let y = row as f64 * row_h + 4.0;
        let allowed = crawler.requests - crawler.disallowed;
        let wa = px(allowed, max, bar_w);
        let wd = px(crawler.disallowed, max, bar_w);
        let name = escape(&crawler.bot);
        let _ = write!(
            page,
            "<g class=\"bar\" data-a=\"{allowed}\" data-d=\"{}\" data-max=\"{max}\" data-w=\"{bar_w}\">\
<title>{name}: {} requests, {} allowed, {} disallowed ({})</title>\
<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{name}</text>\
<rect class=\"a\" x=\"{label_w}\" y=\"{y}\" width=\"{wa:.2}\" height=\"{}\"></rect>\
<rect class=\"d\" x=\"{:.2}\" y=\"{y}\" width=\"{wd:.2}\" height=\"{}\"></rect>\
<text x=\"{}\" y=\"{}\">{} · {}</text></g>",
            crawler.disallowed,
            thousands(crawler.requests),
            thousands(allowed),
            thousands(crawler.disallowed),
            pct(crawler.share),
            label_w - 8.0,
            y + 14.0,
            row_h - 6.0,
            label_w + wa,
            row_h - 6.0,
            label_w + bar_w + 8.0,
            y + 14.0,
            thousands(crawler.requests),
            pct(crawler.share),
        );
    }
    page.push_str("</svg></div>\n");
}

fn timeline(page: &mut String, report: &Report) {
    let buckets = &report.timeline.buckets;
    if buckets.is_empty() {
        return;
    }
    let (left, plot_w, plot_h, top) = (60.0, 860.0, 220.0, 10.0);
    let width = left + plot_w + 20.0;
    let height = top + plot_h + 40.0;
    let max = buckets
        .iter()
        .map(|b| b.allowed + b.disallowed)
        .max()
        .unwrap_or(0)
        .max(1);
    let step = plot_w / buckets.len() as f64;
    let bar = (step - 1.0).max(step * 0.8);
    let base = top + plot_h;
    let _ = write!(
        page,
        "<h2>Crawler requests over time</h2><p class=\"sub legend\">one bar per {every}; \
<i style=\"background:var(--allowed)\"></i>allowed<i style=\"background:var(--disallowed)\"></i>disallowed</p>\
<div class=\"panel\"><svg class=\"chart\" role=\"img\" aria-label=\"crawler requests over time\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\">\
<line class=\"axis\" x1=\"{left}\" y1=\"{base}\" x2=\"{right}\" y2=\"{base}\"></line>\
<text x=\"{label_x}\" y=\"{max_y}\" text-anchor=\"end\">{max_label}</text><text x=\"{label_x}\" y=\"{base}\" text-anchor=\"end\">0</text>",
        every = duration(report.timeline.bucket_seconds),
        right = left + plot_w,
        label_x = left - 6.0,
        max_y = top + 10.0,
        max_label = thousands(max),
    );
    for (i, b) in buckets.iter().enumerate() {
        let x = left + i as f64 * step;
        let hd = px(b.disallowed, max, plot_h);
        let ha = px(b.allowed, max, plot_h);
        let _ = write!(
            page,
            "<g><title>{}: {} allowed, {} disallowed, {} by people</title>\
<rect class=\"d\" x=\"{x:.2}\" y=\"{:.2}\" width=\"{bar:.2}\" height=\"{hd:.2}\"></rect>\
<rect class=\"a\" x=\"{x:.2}\" y=\"{:.2}\" width=\"{bar:.2}\" height=\"{ha:.2}\"></rect></g>",
            escape(&b.start),
            thousands(b.allowed),
            thousands(b.disallowed),
            thousands(b.people),
            base - hd,
            base - hd - ha,
        );
    }
    let label_y = top + plot_h + 18.0;
    let mut labels = vec![(0usize, "start")];
    if buckets.len() > 2 {
        labels.push((buckets.len() / 2, "middle"));
    }
    if buckets.len() > 1 {
        labels.push((buckets.len() - 1, "end"));
    }
    for (index, position) in labels {
        let anchor = match position {
            "start" => "start",
            "end" => "end",
            _ => "middle",
        };
        let x = match position {
            "end" => left + plot_w,
            _ => left + index as f64 * step,
        };
        if let Some(b) = buckets.get(index) {
            let _ = write!(
                page,
                "<text x=\"{x:.2}\" y=\"{label_y}\" text-anchor=\"{anchor}\">{}</text>",
                escape(&b.start)
            );
        }
    }
    page.push_str("</svg></div>\n");
}

/// `3600` → `1 h`.
fn duration(seconds: i64) -> String {
    match seconds {
        s if s % 604_800 == 0 => format!("{} week(s)", s / 604_800),
        s if s % 86_400 == 0 => format!("{} day(s)", s / 86_400),
        s if s % 3600 == 0 => format!("{} h", s / 3600),
        s if s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

fn crawler_table(page: &mut String, report: &Report) {
    if report.crawlers.is_empty() {
        page.push_str("<h2>Crawlers</h2><p>No crawler requests in these logs.</p>\n");
        return;
    }
    page.push_str(
        "<h2>Crawlers</h2><div class=\"panel\"><table class=\"sortable\"><thead><tr>\
<th>crawler</th><th>category</th><th>operator</th><th>follows</th><th class=\"n\">requests</th>\
<th class=\"n\">disallowed</th><th class=\"n\">share</th><th>robots.txt fetched</th>\
<th>first seen</th><th>last seen</th></tr></thead><tbody>\n",
    );
    for c in &report.crawlers {
        let robots = match (&c.robots_first_fetch, c.fetched_robots) {
            (Some(first), _) => format!("{} ({}×)", escape(first), c.robots_fetches),
            (None, true) => format!("yes ({}×)", c.robots_fetches),
            (None, false) => "<span class=\"none\">never</span>".to_owned(),
        };
        let group = match c.group {
            crate::robots::GroupKind::Agent => "its own group",
            crate::robots::GroupKind::Star => "*",
            crate::robots::GroupKind::None => "no group",
        };
        let class = if c.disallowed > 0 { " bad" } else { "" };
        let _ = writeln!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{group}</td><td class=\"n\" data-v=\"{}\">{}</td>\
<td class=\"n{class}\" data-v=\"{}\">{}</td><td class=\"n\" data-v=\"{}\">{}</td><td class=\"t\">{robots}</td><td class=\"t\">{}</td><td class=\"t\">{}</td></tr>",
            escape(&c.bot),
            escape(&c.category),
            escape(c.operator.as_deref().unwrap_or("")),
            c.requests,
            thousands(c.requests),
            c.disallowed,
            thousands(c.disallowed),
            c.share,
            pct(c.share),
            escape(c.first_seen.as_deref().unwrap_or("-")),
            escape(c.last_seen.as_deref().unwrap_or("-")),
        );
    }
    page.push_str("</tbody></table></div>\n");
}

fn paths(page: &mut String, report: &Report) {
    let offenders: Vec<&CrawlerReport> = report
        .crawlers
        .iter()
        .filter(|c| !c.top_disallowed.is_empty() || !c.user_agents.is_empty())
        .collect();
    if offenders.is_empty() {
        return;
    }
    page.push_str("<h2>Most disallowed paths</h2>\n");
    for c in offenders {
        let _ = write!(
            page,
            "<details><summary><b>{}</b> — {} disallowed</summary>",
            escape(&c.bot),
            thousands(c.disallowed)
        );
        if !c.top_disallowed.is_empty() {
            page.push_str(
                "<table><thead><tr><th class=\"n\">requests</th><th>path</th></tr></thead><tbody>",
            );
            for p in &c.top_disallowed {
                let approx = if p.error > 0 { "≤ " } else { "" };
                let _ = write!(
                    page,
                    "<tr><td class=\"n\">{approx}{}</td><td class=\"path\">{}</td></tr>",
                    thousands(p.requests),
                    escape(&p.path)
                );
            }
            page.push_str("</tbody></table>");
        }
        if !c.user_agents.is_empty() {
            page.push_str(
                "<table><thead><tr><th class=\"n\">requests</th><th>User-Agent</th></tr></thead><tbody>",
            );
            for u in &c.user_agents {
                let _ = write!(
                    page,
                    "<tr><td class=\"n\">{}</td><td class=\"path\">{}</td></tr>",
                    thousands(u.requests),
                    escape(&u.user_agent)
                );
            }
            page.push_str("</tbody></table>");
        }
        page.push_str("</details>\n");
    }
}

fn operators(page: &mut String, report: &Report) {
    if report.operators.is_empty() {
        return;
    }
    page.push_str(
        "<h2>Crawls per referral</h2><p class=\"sub\">Each operator's crawler requests against \
the people its products sent (their Referer is one of its hosts): an upper bound, since \
products and apps that send no Referer go unseen.</p><div class=\"panel\"><table class=\"sortable\">\
<thead><tr><th>operator</th><th class=\"n\">crawls</th><th class=\"n\">referrals</th>\
<th class=\"n\">crawls per referral</th></tr></thead><tbody>",
    );
    for o in &report.operators {
        let per = o
            .crawls_per_referral
            .map_or("—".to_owned(), |per| format!("{per:.1}"));
        let _ = write!(
            page,
            "<tr><td>{}</td><td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\" data-v=\"{}\">{}</td>\
<td class=\"n\" data-v=\"{}\">{per}</td></tr>",
            escape(&o.operator),
            o.crawls,
            thousands(o.crawls),
            o.referrals,
            thousands(o.referrals),
            // Sorted as the most crawls per referral when it referred nobody.
            o.crawls_per_referral.map_or("1e300".to_owned(), |per| per.to_string()),
        );
    }
    page.push_str("</tbody></table></div>\n");
}

fn rules(page: &mut String, report: &Report) {
    if report.rules.is_empty() {
        return;
    }
    let _ = write!(
        page,
        "<h2>Rule lines</h2><p class=\"sub\">How many crawler requests each line of robots.txt \
decided; {} rule line(s) decided none.</p><div class=\"panel\"><table class=\"sortable\"><thead><tr>\
<th class=\"n\">line</th><th>rule</th><th class=\"n\">allowed</th><th class=\"n\">disallowed</th>\
</tr></thead><tbody>",
        report.rules_unused
    );
    for r in &report.rules {
        let _ = write!(
            page,
            "<tr><td class=\"n\" data-v=\"{0}\">{0}</td><td class=\"path\">{1}: {2}</td>\
<td class=\"n\" data-v=\"{3}\">{4}</td><td class=\"n\" data-v=\"{5}\">{6}</td></tr>",
            r.line,
            r.kind.directive(),
            escape(&r.pattern),
            r.allowed,
            thousands(r.allowed),
            r.disallowed,
            thousands(r.disallowed)
        );
    }
    page.push_str("</tbody></table></div>\n");
}

fn skipped(page: &mut String, report: &Report) {
    if report.malformed.is_empty() {
        return;
    }
    let _ = write!(
        page,
        "<h2>Skipped lines</h2><p class=\"sub\">{} malformed lines; the first ones:</p>\
<div class=\"panel\"><table><thead><tr><th>where</th><th>why</th><th>line</th></tr></thead><tbody>",
        thousands(report.skipped)
    );
    for m in &report.malformed {
        let _ = write!(
            page,
            "<tr><td>{}:{}</td><td>{}</td><td class=\"path\">{}</td></tr>",
            escape(&m.file),
            m.line,
            escape(&m.reason),
            escape(&m.text)
        );
    }
    page.push_str("</tbody></table></div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_neutralises_markup() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(escape("a\u{1b}b"), "a&#xFFFD;b");
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(60), "1 min");
        assert_eq!(duration(900), "15 min");
        assert_eq!(duration(10_800), "3 h");
        assert_eq!(duration(86_400), "1 day(s)");
        assert_eq!(duration(1_209_600), "2 week(s)");
    }
}
