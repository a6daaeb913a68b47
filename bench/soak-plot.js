// The soak's plot: an SVG of its samples (one panel per series), turned into a PNG by the
// Debian chromium that the dashboard tests use (playwright-core drives it; nothing is downloaded).
import { existsSync, writeFileSync } from 'node:fs';

const PANELS = [
  { key: 'rss_mb', label: 'RSS (MiB)', color: '#1f77b4' },
  { key: 'heap_mb', label: 'JS heap used (MiB)', color: '#2ca02c' },
  { key: 'fds', label: 'open file descriptors', color: '#d62728' },
  { key: 'lag_p99_ms', label: 'event-loop lag p99 (ms)', color: '#9467bd' },
];

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** An SVG with one line chart per series; the warm-up is shaded. */
export function soakSvg(samples, { title, warmupSeconds }) {
  const width = 900;
  const panelHeight = 170;
  const left = 70;
  const right = 20;
  const top = 40;
  const height = top + PANELS.length * (panelHeight + 30) + 20;
  const tMax = Math.max(1, ...samples.map((s) => s.t_s));
  const x = (t) => left + ((width - left - right) * t) / tMax;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<title>${esc(title)}</title>`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${left}" y="22" font-size="15" font-weight="bold">${esc(title)}</text>`,
  ];
  PANELS.forEach((panel, i) => {
    const y0 = top + i * (panelHeight + 30);
    const values = samples.map((s) => s[panel.key]);
    const max = Math.max(1, ...values) * 1.1;
    const y = (v) => y0 + panelHeight - (panelHeight * v) / max;
    parts.push(
      `<rect x="${left}" y="${y0}" width="${x(Math.min(warmupSeconds, tMax)) - left}" height="${panelHeight}" fill="#f2f2f2"/>`,
      `<line x1="${left}" y1="${y0 + panelHeight}" x2="${width - right}" y2="${y0 + panelHeight}" stroke="#333"/>`,
      `<line x1="${left}" y1="${y0}" x2="${left}" y2="${y0 + panelHeight}" stroke="#333"/>`,
      `<text x="${left + 6}" y="${y0 + 14}" fill="${panel.color}" font-weight="bold">${esc(panel.label)}</text>`,
      `<text x="${left - 6}" y="${y0 + 4}" text-anchor="end">${max.toFixed(max < 10 ? 1 : 0)}</text>`,
      `<text x="${left - 6}" y="${y0 + panelHeight}" text-anchor="end">0</text>`,
      `<text x="${width - right}" y="${y0 + panelHeight + 16}" text-anchor="end">${(tMax / 60).toFixed(1)} min</text>`,
      `<polyline fill="none" stroke="${panel.color}" stroke-width="2" points="${samples
        .map((s) => `${x(s.t_s).toFixed(1)},${y(s[panel.key]).toFixed(1)}`)
        .join(' ')}"/>`,
    );
  });
  parts.push('</svg>');
  return parts.join('\n');
}

/** Writes the SVG and, when chromium is there, the PNG; returns the PNG path or null. */
export async function writePlot(samples, opts, svgPath, pngPath) {
  const svg = soakSvg(samples, opts);
  writeFileSync(svgPath, svg);
  const chromiumPath = process.env.TASKHOOK_CHROMIUM ?? '/usr/bin/chromium';
  if (!existsSync(chromiumPath)) {
    console.error(`[soak] ${chromiumPath} not found: wrote ${svgPath} only (install chromium for the PNG)`);
    return null;
  }
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  try {
    const page = await browser.newPage();
    await page.setContent(`<html><body style="margin:0">${svg}</body></html>`);
    await page.locator('svg').screenshot({ path: pngPath });
  } finally {
    await browser.close();
  }
  return pngPath;
}
