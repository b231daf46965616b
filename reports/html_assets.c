/* html_assets.c: the constant parts of the HTML report: its style sheet, the sorting
 * script and the Content-Security-Policy that names the script by its hash. */
#include <stdio.h>

#include "html_page.h"

/* The sorting script. The CSP allows it by its SHA-256 (of the lines below, each ending
 * in a newline): after any change, recompute it, e.g. with
 *   python3 -c 'import base64,hashlib,re,sys; s=open(sys.argv[1]).read();
 *     b=re.search("<script>(.*?)</script>", s, re.S).group(1).encode();
 *     print(base64.b64encode(hashlib.sha256(b).digest()).decode())' report.html
 * html_golden.sh checks that they agree, and in the browser test a stale hash shows as a
 * Content Security Policy error on the console. */
static const char *const script_lines[] = {
    "(function () {",
    "  'use strict';",
    "  function key(tr, col) {",
    "    var td = tr.cells[col], v = td.getAttribute('data-v');",
    "    return v === null ? td.textContent : parseFloat(v);",
    "  }",
    "  function sortBy(table, th, asc) {",
    "    var col = th.cellIndex, body = table.tBodies[0];",
    "    var rows = Array.prototype.slice.call(body.rows);",
    "    rows.sort(function (a, b) {",
    "      var x = key(a, col), y = key(b, col);",
    "      var c = typeof x === 'number' ? x - y : (x < y ? -1 : x > y ? 1 : 0);",
    "      return (asc ? c : -c) || a.getAttribute('data-rank') - b.getAttribute('data-rank');",
    "    });",
    "    rows.forEach(function (tr) { body.appendChild(tr); });",
    "    Array.prototype.forEach.call(th.parentNode.cells, function (h) {",
    "      h.removeAttribute('aria-sort');",
    "    });",
    "    th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');",
    "  }",
    "  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (t) {",
    "    Array.prototype.forEach.call(t.tHead.rows[0].cells, function (th) {",
    "      var b = th.querySelector('button');",
    "      if (b) b.addEventListener('click', function () {",
    "        sortBy(t, th, th.getAttribute('aria-sort') !== 'ascending');",
    "      });",
    "    });",
    "    var m = /^#sort=(-?)([a-z_]+)$/.exec(location.hash);",
    "    var th = m && t.querySelector('th[data-key=\"' + m[2] + '\"]');",
    "    if (th) sortBy(t, th, !m[1]);",
    "    t.classList.add('js-sortable');",
    "  });",
    "  Array.prototype.forEach.call(document.querySelectorAll('.kpi b'), function (b) {",
    "    if (b.scrollWidth > b.clientWidth + 1) b.setAttribute('data-clipped', '');",
    "  });",
    "}());",
    NULL,
};
#define SCRIPT_SHA256 "sha256-OMU+F3lr7NtDgga/eTxjynHTuaDqe2yzeslDJC2fUzc="

/* img-src data: only for the empty favicon, which stops the browser asking for one */
#define CSP "default-src 'none'; style-src 'unsafe-inline'; script-src '" SCRIPT_SHA256 \
            "'; img-src data:; base-uri 'none'; form-action 'none'"

/* Split in lines: ISO C only promises 4095-character string literals. */
static const char *const css_lines[] = {
    ":root{color-scheme:light dark;--bg:#f4f5f7;--card:#fff;--fg:#1d232b;--muted:#5d6673;",
    "--line:#dde1e6;--grid:#eceef1;--accent:#1f5fbf;--bad:#c0392b;--ok:#2e7d32;--track:#eef0f3;",
    "--font:system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,\"Noto Sans\",",
    "\"Liberation Sans\",sans-serif;",
    "--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,\"Liberation Mono\",monospace}",
    "@media (prefers-color-scheme:dark){:root{--bg:#0f1216;--card:#171b21;--fg:#e4e7eb;",
    "--muted:#9aa3ae;--line:#2b3139;--grid:#232930;--accent:#6ea8fe;--bad:#ff6b5e;--ok:#6fcf73;",
    "--track:#222830}}",
    "*{box-sizing:border-box}",
    "body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.5 var(--font)}",
    "main{max-width:1280px;margin:0 auto;padding:28px 28px 48px}",
    "h1{font-size:25px;line-height:1.25;margin:0 0 4px;font-weight:650}",
    "h2{font-size:18px;margin:0 0 4px}",
    "h3{font-size:16px;margin:0;display:inline}",
    "h4{font-size:12px;margin:20px 0 8px;color:var(--muted);text-transform:uppercase;",
    "letter-spacing:.05em}",
    ".sub,.note{color:var(--muted)}",
    ".sub{margin:0 0 18px}",
    ".note{font-size:13px;margin:4px 0 12px}",
    ".answer{background:var(--card);border:1px solid var(--line);border-left:5px solid var(--ok);",
    "border-radius:8px;padding:14px 18px;font-size:15px;margin:0 0 16px}",
    ".answer.none{border-left-color:var(--bad)}",
    ".kpis{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:12px;",
    "margin:0 0 20px}",
    ".kpi{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 14px}",
    ".kpi b{display:block;font-size:20px;font-weight:650;font-variant-numeric:tabular-nums;",
    "overflow-wrap:anywhere}",
    ".kpi span{color:var(--muted);font-size:11.5px;text-transform:uppercase;letter-spacing:.05em}",
    ".kpi small{font-size:12px;font-weight:500;color:var(--muted)}",
    ".card{background:var(--card);border:1px solid var(--line);border-radius:10px;",
    "padding:18px 22px;margin:0 0 20px}",
    "details.card>summary{cursor:pointer;list-style-position:outside;margin-left:16px}",
    "details.card[open]>summary{margin-bottom:12px}",
    ".badge{color:var(--muted);font-size:13px;margin-left:10px}",
    ".inputs{display:grid;grid-template-columns:max-content 1fr;gap:5px 22px;margin:12px 0 0}",
    ".inputs dt{color:var(--muted)}",
    ".inputs dd{margin:0}",
    "code,.mono{font-family:var(--mono);font-size:12.5px}",
    "pre.cmd{white-space:pre-wrap;word-break:break-all;background:var(--track);padding:10px 12px;",
    "border-radius:6px;margin:0;font-family:var(--mono);font-size:12.5px}",
    ".facts{display:flex;flex-wrap:wrap;gap:6px 28px;margin:10px 0}",
    ".facts div span{display:block;color:var(--muted);font-size:11.5px;text-transform:uppercase;",
    "letter-spacing:.05em}",
    ".facts div b{font-size:16px;font-weight:600;font-variant-numeric:tabular-nums}",
    "table{border-collapse:collapse;font-variant-numeric:tabular-nums}",
    ".tablewrap{overflow:auto;max-height:85vh;border:1px solid var(--line);border-radius:6px}",
    "table.data{width:100%;font-size:12.5px}",
    "table.data th,table.data td{padding:5px 9px;border-bottom:1px solid var(--line);",
    "text-align:left;white-space:nowrap}",
    "table.data th{position:sticky;top:0;background:var(--card);z-index:1;font-weight:600;",
    "vertical-align:bottom;box-shadow:0 1px 0 var(--line)}",
    "table.data .n{text-align:right}",
    "table.data tbody tr:hover{background:var(--track)}",
    "table.data td.why{white-space:normal;min-width:260px}",
    "th button{all:unset;cursor:pointer}",
    "th button:focus-visible{outline:2px solid var(--accent)}",
    "th[aria-sort=ascending] button::after{content:\" \\25B2\";font-size:9px}",
    "th[aria-sort=descending] button::after{content:\" \\25BC\";font-size:9px}",
    "tr.nofit td{color:var(--bad)}",
    ".bad{color:var(--bad)}",
    "a{color:var(--accent)}",
    "svg.chart{width:100%;height:auto;display:block;font-family:var(--font)}",
    "svg.bar{width:100%;height:20px;display:block;margin:6px 0 2px}",
    ".grid{stroke:var(--grid)}",
    ".axis{stroke:var(--muted)}",
    ".tick{fill:var(--muted);font-size:11px}",
    ".axis-title{fill:var(--fg);font-size:12px}",
    ".ln{fill:none;stroke:var(--c);stroke-width:2}",
    ".pt{fill:var(--c);stroke:var(--card);stroke-width:1}",
    ".pt.miss{fill:var(--card);stroke:var(--c);stroke-width:1.5}",
    ".off{fill:var(--c)}",
    ".budget{stroke:var(--bad);stroke-width:1.5;stroke-dasharray:6 4}",
    ".budget-label{fill:var(--bad);font-size:11px}",
    ".front{fill:none;stroke:var(--fg);stroke-width:1.5;stroke-dasharray:4 3;opacity:.7}",
    ".pt.front-pt{stroke:var(--fg);stroke-width:2}",
    ".ring{fill:none;stroke:var(--fg);stroke-width:2}",
    ".seg{fill:var(--c)}",
    ".track{fill:var(--track)}",
    ".band{fill:var(--fg);fill-opacity:.12;stroke:var(--fg);stroke-width:1;stroke-dasharray:3 2}",
    ".whisker{stroke:var(--c);stroke-width:1.5;opacity:.6}",
    ".sw.band{background:var(--track);border:1px dashed var(--fg)}",
    ".lbl{fill:var(--fg);font-size:12px}",
    ".lbl2{fill:var(--muted);font-size:11px}",
    ".legend{display:flex;flex-wrap:wrap;gap:4px 18px;list-style:none;padding:0;margin:6px 0 0;",
    "font-size:12.5px}",
    ".sw{display:inline-block;width:11px;height:11px;border-radius:2px;background:var(--c);",
    "margin-right:6px;vertical-align:-1px}",
    ".sw.line{height:3px;width:16px;vertical-align:3px}",
    ".sw.ring{background:none;border:2px solid var(--fg);border-radius:50%}",
    ".sw.budget{background:var(--bad);height:2px;width:16px;vertical-align:3px}",
    ".dash{stroke-dasharray:7 3}",
    ".c0{--c:#4e79a7}.c1{--c:#f28e2b}.c2{--c:#e15759}.c3{--c:#76b7b2}.c4{--c:#59a14f}",
    ".c5{--c:#edc948}.c6{--c:#b07aa1}.c7{--c:#ff9da7}.c8{--c:#9c755f}.c9{--c:#bab0ac}",
    ".k0{--c:#8d949c}.k1{--c:#4e79a7}.k2{--c:#f28e2b}.k3{--c:#e15759}.k4{--c:#59a14f}",
    ".k5{--c:#b07aa1}.k6{--c:#edc948}.k7{--c:#d3d7dc}",
    "@media (prefers-color-scheme:dark){.k7{--c:#3d444d}}",
    ".cols{display:grid;grid-template-columns:1fr 1fr;gap:8px 28px}",
    "@media (max-width:1000px){.cols{grid-template-columns:1fr}}",
    "footer{color:var(--muted);font-size:12.5px;margin-top:8px}",
    "@media print{body{background:#fff}.tablewrap{max-height:none;overflow:visible}",
    ".card{break-inside:avoid}}",
    NULL,
};

const char html_csp[] = CSP;

void html_style(FILE *f)
{
    fputs("<style>\n", f);
    for (size_t i = 0; css_lines[i]; i++)
        fprintf(f, "%s\n", css_lines[i]);
    fputs("</style>\n", f);
}

void html_script(FILE *f)
{
    fputs("<script>", f);
    for (size_t i = 0; script_lines[i]; i++)
        fprintf(f, "%s\n", script_lines[i]);
    fputs("</script>\n", f);
}
