// grounded view: search the index, list the hits, show the selected hit's pages with its boxes drawn.
// Everything comes from this server (no CDN); the server renders the highlighted pages as PNGs.
// Every error the server answers is shown in the page as text (never a broken image).
"use strict";

const $ = (id) => document.getElementById(id);
const ZOOMS = [1, 1.5, 2, 3];  // times the fitted width
const BASE_DPI = 110;
let current = [];
let selected = -1;
let zoom = 0;  // index into ZOOMS
let objectUrls = [];
let generation = 0;  // a newer selection or zoom cancels the loads of an older one

function setStatus(text, isError) {
  const el = $("status");
  el.textContent = text;
  el.className = isError ? "error" : "";
}

// The server's JSON {error, status} as one line; anything else (a proxy's page, a dropped connection) too.
async function errorText(response) {
  try {
    const data = await response.clone().json();
    if (data && data.error) return `${data.error} (HTTP ${response.status})`;
  } catch (_) { /* not JSON */ }
  const text = (await response.text()).replace(/<[^>]*>/g, " ").replace(/\s+/g, " ").trim().slice(0, 300);
  return `${text || response.statusText || "error"} (HTTP ${response.status})`;
}

function unreachable(err) {
  return `the viewer did not answer (${err.message}); is grounded view still running?`;
}

async function getJSON(url) {
  let response;
  try {
    response = await fetch(url, { headers: { Accept: "application/json" } });
  } catch (err) {
    throw new Error(unreachable(err));
  }
  if (!response.ok) throw new Error(await errorText(response));
  return response.json();
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function notes(data) {  // a message the search API adds to its answer, in whichever field it uses
  const items = [data.note, data.notes, data.message, data.warning, data.warnings].flat().filter((x) => typeof x === "string" && x);
  return items.join(" ");
}

function showHits(hits) {
  const list = $("hits");
  list.replaceChildren();
  hits.forEach((hit, i) => {
    const item = el("li");
    const button = el("button", "hit");
    button.type = "button";
    button.dataset.index = String(i);
    button.dataset.chunkId = hit.chunk_id;
    button.setAttribute("aria-selected", "false");
    const top = el("div", "top");
    const name = el("span", "name", hit.source_name);
    name.title = hit.source_path;
    const score = el("span", "score", hit.score.toFixed(4));
    score.title = `score (${hit.mode})`;
    top.append(el("span", "rank", `#${hit.rank}`), name, el("span", "pages", `p. ${hit.pages.join(", ")}`), score);
    button.append(top, el("div", "path", hit.heading_path.join(" › ") || "(no heading)"),
                  el("div", "snippet", hit.text.slice(hit.body_start).replace(/\s+/g, " ").slice(0, 300)));
    if (hit.focus_text && hit.focus_text.length) {  // the sentences, rows or items that answer the question
      button.append(el("div", "focus", `» ${hit.focus_text.join(" … ").replace(/\s+/g, " ").slice(0, 300)}`));
    }
    if (hit.source_missing) button.append(el("div", "gone", "this PDF is no longer on disk"));
    button.addEventListener("click", () => select(i));
    item.append(button);
    list.append(item);
  });
}

function pageDpi() {
  return Math.min(300, Math.round(BASE_DPI * ZOOMS[zoom] * Math.max(1, window.devicePixelRatio || 1)));
}

function pageUrl(image, dpi) {
  return dpi === BASE_DPI ? image.url : `${image.url}&dpi=${dpi}`;
}

// The zoom label tells the page's real size: 100 % is the PDF's own size (72 pt = 1 in = 96 CSS px),
// measured on the shown image, so the same label means the same size in any window; the steps
// stay multiples of the fitted width ("fit" names the fitted one).
function updateZoomLabel() {
  const img = document.querySelector("#pages img.page");
  const dpi = img ? Number(img.dataset.dpi) : 0;
  let label = zoom === 0 ? "fit" : `${ZOOMS[zoom]}× fit`;
  if (img && img.complete && img.naturalWidth > 0 && dpi > 0 && img.clientWidth > 0) {
    const percent = Math.round((100 * img.clientWidth) / ((img.naturalWidth / dpi) * 96));
    label = zoom === 0 ? `fit · ${percent} %` : `${percent} %`;
  }
  $("zoom-level").textContent = label;
}

// One page: "loading", then the image, or the server's error as text.
async function loadPage(figure, hit, image, gen) {
  let message;
  try {
    const dpi = pageDpi();
    const response = await fetch(pageUrl(image, dpi));
    if (gen !== generation) return;
    if (response.ok) {
      const url = URL.createObjectURL(await response.blob());
      if (gen !== generation) { URL.revokeObjectURL(url); return; }
      objectUrls.push(url);
      const img = el("img", "page");
      img.alt = `page ${image.page} with the chunk's lines highlighted`;
      img.dataset.page = String(image.page);
      img.dataset.chunkId = hit.chunk_id;
      img.dataset.dpi = String(dpi);
      img.title = "click to zoom";
      img.addEventListener("click", () => setZoom(zoom === 0 ? 2 : 0));
      img.addEventListener("load", () => {
        if (gen !== generation) return;
        updateZoomLabel();
        scrollToFocus(hit, image.page, img);
      }, { once: true });
      img.src = url;
      figure.querySelector(".slot").replaceChildren(img);
      return;
    }
    message = await errorText(response);
  } catch (err) {
    message = unreachable(err);
  }
  if (gen !== generation) return;
  const error = el("p", "error", `Page ${image.page} cannot be shown: ${message}`);
  error.setAttribute("role", "alert");
  error.dataset.page = String(image.page);
  figure.querySelector(".slot").replaceChildren(error);
}

// The first page holding the focus is scrolled so that the focus's first line sits in the upper third
// of the window (the page would otherwise show its top, the answer often below the fold).
function scrollToFocus(hit, page, img) {
  const boxes = (hit.focus_boxes || []).filter((b) => b.page === page);
  const first = (hit.focus_boxes || [])[0];
  if (!boxes.length || !first || first.page !== page) return;
  const top = Math.min(...boxes.map((b) => b.top));
  const y = img.getBoundingClientRect().top + window.scrollY + top * img.clientHeight;
  window.scrollTo({ top: Math.max(0, y - window.innerHeight / 3), behavior: "auto" });
  const left = Math.min(...boxes.map((b) => b.left));
  const slot = img.closest("figure");
  if (slot && zoom > 0) slot.scrollLeft = Math.max(0, left * img.clientWidth - 24);
}

// The chunk's text with its headings and its focus marked.
function chunkText(hit) {
  const text = $("chunk-text");
  text.replaceChildren();
  const cuts = new Set([0, hit.body_start, hit.text.length]);
  (hit.focus || []).forEach(([a, b]) => { cuts.add(a); cuts.add(b); });
  const points = [...cuts].sort((a, b) => a - b);
  for (let i = 0; i + 1 < points.length; i++) {
    const [a, b] = [points[i], points[i + 1]];
    if (a === b) continue;
    const piece = hit.text.slice(a, b);
    const inFocus = (hit.focus || []).some(([s, e]) => s <= a && b <= e);
    const node = inFocus ? el("mark", "focus", piece) : (a < hit.body_start ? el("span", "headings", piece) : document.createTextNode(piece));
    text.append(node);
  }
}

function showPages(hit) {
  generation += 1;
  objectUrls.forEach((url) => URL.revokeObjectURL(url));
  objectUrls = [];
  const pages = $("pages");
  pages.replaceChildren();
  for (const image of hit.page_images) {  // multi-page chunks: page after page
    const figure = el("figure");
    const slot = el("div", "slot");
    slot.append(el("p", "loading", `loading page ${image.page}…`));
    figure.append(slot, el("figcaption", "", `${hit.source_name} — page ${image.page}`));
    pages.append(figure);
    loadPage(figure, hit, image, generation);
  }
}

function setZoom(level) {
  const next = Math.max(0, Math.min(ZOOMS.length - 1, level));
  const changed = next !== zoom;
  zoom = next;
  $("pages").style.setProperty("--zoom", String(ZOOMS[zoom]));
  $("pages").classList.toggle("zoomed", zoom > 0);
  updateZoomLabel();
  $("zoom-out").disabled = zoom === 0;
  $("zoom-fit").disabled = zoom === 0;
  $("zoom-in").disabled = zoom === ZOOMS.length - 1;
  if (changed && selected >= 0) showPages(current[selected]);  // sharper pages for the new size
}

function showDetailError(text) {
  const box = $("detail-error");
  box.textContent = text;
  box.hidden = !text;
}

function select(i) {
  const hit = current[i];
  if (!hit) return;
  selected = i;
  document.querySelectorAll(".hit").forEach((b) => b.setAttribute("aria-selected", String(b.dataset.index === String(i))));
  $("detail").hidden = false;
  $("viewer").hidden = false;
  showDetailError("");
  $("detail-heading").textContent = hit.heading_path.join(" › ") || hit.source_name;
  $("detail-meta").textContent =
    `${hit.source_name} · pages ${hit.pages.join(", ")} · score ${hit.score.toFixed(4)} (${hit.mode}` +
    (hit.text_rank ? `, text #${hit.text_rank}` : "") + (hit.vector_rank ? `, vector #${hit.vector_rank}` : "") +
    `) · chunk ${hit.chunk_id} · config ${hit.config.slice(0, 16)} · sha256 ${hit.source_sha256.slice(0, 12)}`;
  $("download").href = hit.annotated_url;
  $("source").href = hit.source_url;
  chunkText(hit);
  const mark = $("chunk-text").querySelector("mark.focus");
  if (mark) $("chunk-text").scrollTop = Math.max(0, mark.offsetTop - $("chunk-text").offsetTop - 8);
  showPages(hit);
}

// The two links: fetched first, so an error (a changed PDF, a stopped server) is shown as text.
async function download(event) {
  event.preventDefault();
  const link = event.currentTarget;
  showDetailError("");
  try {
    const response = await fetch(link.href);
    if (!response.ok) { showDetailError(`The annotated PDF cannot be made: ${await errorText(response)}`); return; }
    const blob = await response.blob();
    const name = /filename\*=UTF-8''([^;]+)/.exec(response.headers.get("Content-Disposition") || "");
    const a = el("a");
    a.href = URL.createObjectURL(blob);
    a.download = name ? decodeURIComponent(name[1]) : "highlighted.pdf";
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60_000);
  } catch (err) {
    showDetailError(unreachable(err));
  }
}

async function openSource(event) {
  event.preventDefault();
  const href = event.currentTarget.href;
  showDetailError("");
  try {
    const head = await fetch(href, { method: "HEAD" });
    if (head.ok) {
      window.open(href, "_blank", "noopener");  // within the click's activation: not a blocked popup
      return;
    }
    const response = await fetch(href);  // a HEAD answer has no body: the message comes with GET
    showDetailError(`The original PDF cannot be opened: ${response.ok ? `HTTP ${head.status}` : await errorText(response)}`);
  } catch (err) {
    showDetailError(unreachable(err));
  }
}

async function runSearch(event) {
  event.preventDefault();
  const q = $("q").value;
  const params = new URLSearchParams({ q, mode: $("mode").value, k: $("k").value });
  setStatus("searching…");
  try {
    const data = await getJSON(`/api/search?${params}`);
    current = data.hits;
    selected = -1;
    showHits(current);
    const note = notes(data);
    if (!current.length) {
      $("detail").hidden = true;
      $("viewer").hidden = true;
      const message = note || `No hit for this question (${data.mode}): try other words, or another mode.`;
      setStatus(`No hit (${data.mode}).`, Boolean(note));  // the reason stands once, where the hits would be
      $("hits").replaceChildren(el("li", "empty", message));
      return;
    }
    setStatus(`${current.length} hit${current.length === 1 ? "" : "s"} (${data.mode})${note ? ` · ${note}` : ""}`);
    select(0);  // the best hit is shown at once
    $("q").blur();  // the keys now move between hits and zoom, as the page says (the question box keeps its text)
  } catch (err) {
    setStatus("The search failed: the reason is below.", true);  // said once, where the hits would be
    current = [];
    selected = -1;
    $("detail").hidden = true;
    $("viewer").hidden = true;
    $("hits").replaceChildren(el("li", "empty error", err.message));
  }
}

function onKey(event) {
  if (event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement) return;
  if (event.key === "+" || event.key === "=") setZoom(zoom + 1);
  else if (event.key === "-") setZoom(zoom - 1);
  else if (event.key === "0") setZoom(0);
  else if ((event.key === "ArrowDown" || event.key === "j") && selected < current.length - 1) select(selected + 1);
  else if ((event.key === "ArrowUp" || event.key === "k") && selected > 0) select(selected - 1);
  else return;
  event.preventDefault();
}

async function init() {
  $("search-form").addEventListener("submit", runSearch);
  $("zoom-in").addEventListener("click", () => setZoom(zoom + 1));
  $("zoom-out").addEventListener("click", () => setZoom(zoom - 1));
  $("zoom-fit").addEventListener("click", () => setZoom(0));
  window.addEventListener("resize", updateZoomLabel);
  $("download").addEventListener("click", download);
  $("source").addEventListener("click", openSource);
  document.addEventListener("keydown", onKey);
  setZoom(0);
  try {
    const info = await getJSON("/api/info");
    for (const mode of info.modes) {
      const option = el("option", "", mode);
      option.selected = mode === info.default_mode;
      $("mode").append(option);
    }
    setStatus(`${info.documents} document(s) indexed`);
  } catch (err) {
    setStatus(err.message, true);
  }
}

init();
