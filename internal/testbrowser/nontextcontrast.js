// WCAG 2.2 1.4.11 as the page renders it, which axe-core does not check: the border of every visible
// field, the fill or border of every button, and the focus ring of every focusable element, each at least
// 3:1 against the background around it. One expression that answers the problems found (an array of
// strings). The Go tests (testbrowser.NonTextContrast) and the React example's tests evaluate this file.
(() => {
  const parse = c => { const m = /rgba?\(([^)]+)\)/.exec(c || ""); if (!m) return null;
    const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number); return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1}; };
  const lum = ({r, g, b}) => { const f = v => { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const around = el => { for (let e = el.parentElement; e; e = e.parentElement) { const c = parse(getComputedStyle(e).backgroundColor); if (c && c.a > 0) return c; }
    return {r: 255, g: 255, b: 255, a: 1}; };
  const name = el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className ? "." + String(el.className).split(" ")[0] : "") + " «" + (el.textContent || el.value || "").trim().slice(0, 30) + "»";
  const shown = el => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== "hidden";
  const out = [];
  for (const el of document.querySelectorAll("input:not([type=hidden]), select, textarea")) {
    if (!shown(el)) continue;
    const s = getComputedStyle(el), r = ratio(parse(s.borderTopColor), around(el));
    if (!(parseFloat(s.borderTopWidth) > 0) || r < 3) out.push("field border of " + name(el) + ": " + r.toFixed(2) + ":1");
  }
  for (const el of document.querySelectorAll("button, a.button")) {
    if (!shown(el)) continue;
    const s = getComputedStyle(el), fill = parse(s.backgroundColor);
    const edge = fill && fill.a > 0 ? fill : parse(s.borderTopColor);
    const r = edge ? ratio(edge, around(el)) : 0;
    if (r < 3) out.push("button edge of " + name(el) + ": " + r.toFixed(2) + ":1");
  }
  for (const el of document.querySelectorAll("a[href], button, input:not([type=hidden]), summary, select, textarea")) {
    // A field with passkey autofill is left alone: focusing it may open the browser's passkey chooser.
    if (!shown(el) || /webauthn/.test(el.getAttribute("autocomplete") || "")) continue;
    el.focus();
    if (document.activeElement !== el) continue; // not focusable as it is (in a closed <details>)
    const s = getComputedStyle(el);
    if (s.outlineStyle === "none" || parseFloat(s.outlineWidth) < 2) { out.push("no focus ring on " + name(el)); continue; }
    const r = ratio(parse(s.outlineColor), around(el));
    if (r < 3) out.push("focus ring of " + name(el) + ": " + r.toFixed(2) + ":1");
  }
  if (document.activeElement) document.activeElement.blur();
  return out;
})()
