// grounded view: search the index, list the hits, show the selected hit's pages with its boxes drawn.
// Everything comes from this server (no CDN); the server renders the highlighted pages as PNGs.
"use strict";

const $ = (id) => document.getElementById(id);
let current = [];

function setStatus(text, isError) {
  const el = $("status");
  el.textContent = text;
  el.className = isError ? "error" : "";
}

async function getJSON(url) {
  const response = await fetch(url, { headers: { Accept: "application/json" } });
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
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
    top.append(el("span", "rank", `#${hit.rank} · ${hit.source_name} · p. ${hit.pages.join(", ")}`),
               el("span", "score", hit.score.toFixed(4)));
    button.append(top, el("div", "path", hit.heading_path.join(" › ") || "(no heading)"),
                  el("div", "snippet", hit.text.slice(hit.body_start).replace(/\s+/g, " ").slice(0, 300)));
    button.addEventListener("click", () => select(i));
    item.append(button);
    list.append(item);
  });
}

function select(i) {
  const hit = current[i];
  document.querySelectorAll(".hit").forEach((b) => b.setAttribute("aria-selected", String(b.dataset.index === String(i))));
  const pages = $("pages");
  pages.replaceChildren();
  for (const image of hit.page_images) {  // multi-page chunks: page after page
    const figure = el("figure");
    const img = el("img", "page");
    img.alt = `page ${image.page} with the chunk's lines highlighted`;
    img.dataset.page = String(image.page);
    img.dataset.chunkId = hit.chunk_id;
    img.src = image.url;
    figure.append(img, el("figcaption", "", `${hit.source_name} — page ${image.page}`));
    pages.append(figure);
  }
  $("detail").hidden = false;
  $("detail-heading").textContent = hit.heading_path.join(" › ") || hit.source_name;
  $("detail-meta").textContent =
    `${hit.source_name} · pages ${hit.pages.join(", ")} · score ${hit.score.toFixed(4)} (${hit.mode}` +
    (hit.text_rank ? `, text #${hit.text_rank}` : "") + (hit.vector_rank ? `, vector #${hit.vector_rank}` : "") +
    `) · chunk ${hit.chunk_id} · config ${hit.config.slice(0, 16)} · sha256 ${hit.source_sha256.slice(0, 12)}`;
  $("download").href = hit.annotated_url;
  $("source").href = hit.source_url;
  const text = $("chunk-text");
  text.replaceChildren();
  if (hit.body_start > 0) text.append(el("span", "headings", hit.text.slice(0, hit.body_start)));
  text.append(document.createTextNode(hit.text.slice(hit.body_start)));
}

async function runSearch(event) {
  event.preventDefault();
  const q = $("q").value.trim();
  if (!q) return;
  const params = new URLSearchParams({ q, mode: $("mode").value, k: $("k").value });
  setStatus("searching…");
  try {
    const data = await getJSON(`/api/search?${params}`);
    current = data.hits;
    showHits(current);
    $("pages").replaceChildren();
    $("detail").hidden = true;
    setStatus(`${current.length} hit(s), ${data.mode}`);
  } catch (err) {
    setStatus(err.message, true);
  }
}

async function init() {
  $("search-form").addEventListener("submit", runSearch);
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
