// narrate serve's pages: voice previews (through POST /v1/audio/speech), a job's live progress
// (server-sent events from /v1/narrations/{id}/events), chapter jumps in a book's player, the
// read-along (the sentence being played highlighted in the book's text; #sentence-N goes to sentence N)
// and the proof's players (each flagged sentence's stretch of the book file, from its start to its end).
// The Content Security Policy allows this file and htmx, nothing inline.
"use strict";

function say(el, text) {
  if (el) el.textContent = text;
}

// Seconds as the pages spell them (narrate.jobs.humanize.duration, spelled): 42 s, 3 min 05 s, 2 h 07 min.
function spelled(seconds) {
  const s = Math.max(0, Math.round(seconds));
  const two = (n) => String(n).padStart(2, "0");
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${two(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${two(Math.floor((s % 3600) / 60))} min`;
}

// A narration's ETA and realtime factor, as the server renders them (jobs/web/templating.py eta,
// realtime): "" where there is none (not running, or not known yet).
function etaText(job) {
  const seconds = (job.progress || {}).eta_s;
  return job.status === "in_progress" && seconds != null ? `ETA ${spelled(seconds)}` : "";
}

function rtfText(job) {
  const factor = (job.progress || {}).realtime_factor;
  return factor ? `${Number(factor).toFixed(2)}× realtime` : "";
}

function readDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

async function preview(button) {
  const note = document.querySelector(button.dataset.note || "#preview-note");
  const player = document.querySelector(button.dataset.audio || "#preview-audio");
  let voice = button.dataset.voice || "";
  const picker = button.dataset.voiceFrom && document.querySelector(button.dataset.voiceFrom);
  if (picker) voice = picker.value;
  const model = button.dataset.modelFrom && document.querySelector(button.dataset.modelFrom);
  const sample = button.dataset.sampleFrom && document.querySelector(button.dataset.sampleFrom);
  if (sample && sample.files && sample.files.length) voice = await readDataUrl(sample.files[0]);
  const source = button.dataset.textFrom && document.querySelector(button.dataset.textFrom);
  const text = (source && (source.value || source.textContent || "").trim()) || button.dataset.text;
  if (!voice) {
    say(note, "Choose a voice or a sample first.");
    return;
  }
  button.disabled = true;
  say(note, "Preparing the preview (it waits for a worker)…");
  try {
    const answer = await fetch("/v1/audio/speech", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ model: (model && model.value) || "tts-1", voice: voice, input: text.slice(0, 300), response_format: "wav" }),
    });
    if (!answer.ok) {
      const said = await answer.json().catch(() => ({}));
      say(note, (said.error && said.error.message) || `The preview failed (HTTP ${answer.status}).`);
      return;
    }
    const url = URL.createObjectURL(await answer.blob());
    player.src = url;
    player.hidden = false;
    say(note, "");
    player.play().catch(() => {});
  } catch (e) {
    say(note, `The preview failed: ${e}`);
  } finally {
    button.disabled = false;
  }
}

function follow(main) {
  const events = new EventSource(main.dataset.events);
  const ended = (main.dataset.ended || "").split(" "); // the API's words for a job that will not change (jobs/queue/states.py)
  events.addEventListener("narration", (event) => {
    const job = JSON.parse(event.data);
    const p = job.progress || {};
    const set = (name, value) => main.querySelectorAll(`[data-field="${name}"]`).forEach((el) => (el.textContent = value));
    set("status", job.status.replace("_", " "));
    main.querySelectorAll('[data-field="status"]').forEach((badge) => {
      badge.className = `status ${job.status}`; // its colour follows the state, as the server renders it
    });
    set("done", p.sentences_done);
    set("total", p.sentences_total);
    set("audio", (p.audio_s || 0).toFixed(1));
    const shown = (name, text) =>
      main.querySelectorAll(`[data-field="${name}"]`).forEach((el) => {
        el.textContent = text;
        el.hidden = !text;
      });
    shown("rtf", rtfText(job));
    shown("eta", etaText(job));
    if (job.proof) {
      main.querySelectorAll("[data-proof-count]").forEach((el) => {
        const n = job.proof[el.dataset.proofCount];
        if (n != null) el.textContent = n; // the proof pass's counts so far
      });
    }
    const list = main.querySelector("ol[data-field-chapters]");
    if (list && Array.isArray(p.chapters)) {
      // Updated in place: a chapter's player, once there, keeps playing through later updates.
      while (list.children.length > p.chapters.length) list.lastElementChild.remove();
      p.chapters.forEach((c, i) => {
        let item = list.children[i];
        if (!item) {
          item = document.createElement("li");
          item.append(document.createTextNode(""), document.createElement("small"));
          list.append(item);
        }
        item.firstChild.textContent = `${c.title} `;
        item.querySelector("small").textContent =
          c.sentences_total == null ? "" : `${c.sentences_done} / ${c.sentences_total}`;
        if (c.audio_url && !item.querySelector("audio")) {
          const player = document.createElement("audio");
          player.controls = true;
          player.preload = "none";
          player.src = c.audio_url;
          item.append(" ", player);
        }
      });
    }
    const bar = main.querySelector("progress[data-field-progress]");
    if (bar && p.sentences_total) {
      bar.max = p.sentences_total;
      bar.value = p.sentences_done;
    }
    if (ended.includes(job.status)) {
      events.close();
      window.location.reload();
    }
  });
  events.onerror = () => {
    if (events.readyState === EventSource.CLOSED) setTimeout(() => follow(main), 3000);
  };
}

// The read-along's sentences, [{start, end, text, chapter}] in seconds: from the timing manifest
// (`--subtitles json`: narrate.jobs.audio.subtitles.manifest), or from the WebVTT subtitles.
function fromManifest(data) {
  const titles = (data.chapters || []).map((c) => c.title);
  return (data.sentences || []).map((s) => ({
    start: Number(s.start), end: Number(s.end), text: s.text, chapter: s.chapter == null ? null : titles[s.chapter],
    index: s.index, paragraph: s.paragraph,
  }));
}

function vttSeconds(clock) {
  return clock.split(":").reduce((total, part) => total * 60 + Number(part), 0);
}

function fromVtt(text) {
  const out = [];
  for (const block of text.replace(/\r/g, "").split(/\n\n+/)) {
    const lines = block.split("\n");
    const at = lines.findIndex((line) => line.includes("-->"));
    if (at < 0) continue;
    const [start, end] = lines[at].split("-->").map((t) => vttSeconds(t.trim().split(/\s+/)[0]));
    const raw = lines.slice(at + 1).join(" ").replace(/<[^>]*>/g, "");
    const shown = raw.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
    out.push({ start, end, text: shown, chapter: null });
  }
  return out;
}

async function readAlong(box) {
  const player = document.querySelector(box.dataset.player);
  const note = box.querySelector("[data-readalong-note]");
  let sentences;
  try {
    const answer = await fetch(box.dataset.readalong, { credentials: "same-origin" });
    if (!answer.ok) throw new Error(`HTTP ${answer.status}`);
    sentences = box.dataset.format === "json" ? fromManifest(await answer.json()) : fromVtt(await answer.text());
  } catch (e) {
    say(note, `The text could not be loaded (${e.message}).`);
    return;
  }
  if (!player || !sentences.length) {
    say(note, "There is no text to follow.");
    return;
  }
  note.remove();
  const spans = [];
  let paragraph = null;
  let chapter;
  let number;
  sentences.forEach((s, i) => {
    const newChapter = !paragraph || s.chapter !== chapter;
    if (newChapter || (s.paragraph != null && s.paragraph !== number)) {
      // A paragraph of its own for each of the book's (the timing manifest numbers them); a chapter's
      // first paragraph that is its title alone (a heading) is shown as the heading, else the title comes first.
      const alone = sentences[i + 1] == null || sentences[i + 1].paragraph !== s.paragraph || s.paragraph == null;
      const isHeading = newChapter && s.chapter && alone && s.text.trim() === s.chapter.trim();
      if (newChapter && s.chapter && !isHeading) {
        const heading = document.createElement("h3");
        heading.textContent = s.chapter;
        box.append(heading);
      }
      chapter = s.chapter;
      number = s.paragraph;
      paragraph = document.createElement(isHeading ? "h3" : "p");
      box.append(paragraph);
    }
    const span = document.createElement("span");
    span.className = "sentence";
    span.textContent = s.text;
    span.dataset.index = String(i);
    span.id = `sentence-${s.index == null ? i : s.index}`; // the book's sentence number (a proof's link goes here)
    span.dataset.start = String(s.start);
    span.dataset.end = String(s.end);
    paragraph.append(span, " ");
    spans.push(span);
  });
  const starts = sentences.map((s) => s.start);
  let current = -1;
  // The sentence being played: the last to start at or before the player's time (it stays lit
  // through the pause after it).
  const show = (follow) => {
    const t = player.currentTime;
    let low = 0;
    let high = starts.length - 1;
    let found = -1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      if (starts[mid] <= t) {
        found = mid;
        low = mid + 1;
      } else {
        high = mid - 1;
      }
    }
    if (found === current) return;
    if (current >= 0) {
      spans[current].classList.remove("current");
      spans[current].removeAttribute("aria-current");
    }
    current = found;
    if (current >= 0) {
      spans[current].classList.add("current");
      spans[current].setAttribute("aria-current", "true");
      if (follow) {
        const view = box.getBoundingClientRect();
        const at = spans[current].getBoundingClientRect();
        if (at.top < view.top || at.bottom > view.bottom) box.scrollTop += at.top - view.top - view.height / 3;
      }
    }
  };
  const frame = () => {
    show(true);
    if (!player.paused && !player.ended) requestAnimationFrame(frame);
  };
  player.addEventListener("play", () => requestAnimationFrame(frame));
  player.addEventListener("timeupdate", () => show(!player.paused));
  player.addEventListener("seeked", () => show(true));
  box.addEventListener("click", (event) => {
    const span = event.target.closest(".sentence");
    if (!span) return;
    player.currentTime = Number(span.dataset.start);
    player.play().catch(() => {});
  });
  // #sentence-N (a proof's link, or a link from elsewhere): that sentence in view, the player at its start.
  const goTo = () => {
    const span = /^#sentence-\d+$/.test(window.location.hash) && box.querySelector(window.location.hash);
    if (!span) return;
    player.currentTime = Number(span.dataset.start);
    const view = box.getBoundingClientRect();
    const at = span.getBoundingClientRect();
    box.scrollTop += at.top - view.top - view.height / 3;
    box.scrollIntoView({ block: "nearest" });
  };
  window.addEventListener("hashchange", goTo);
  box.dataset.ready = "true";
  show(false);
  goTo();
}

// A proof's player: an <audio class="excerpt"> of the book file with a media fragment (#t=start,end) plays
// the sentence alone, from its start each time it is played again, and stops at its end; one player plays
// at a time (the book's player too).
function excerpts() {
  const players = Array.from(document.querySelectorAll("audio"));
  document.querySelectorAll("audio.excerpt").forEach((clip) => {
    const start = Number(clip.dataset.start);
    const end = Number(clip.dataset.end);
    const watch = () => {
      if (clip.paused) return;
      if (clip.currentTime >= end) {
        clip.pause();
        clip.currentTime = end;
        return;
      }
      requestAnimationFrame(watch);
    };
    clip.addEventListener("play", () => {
      if (clip.currentTime < start - 0.05 || clip.currentTime >= end - 0.02) clip.currentTime = start;
      requestAnimationFrame(watch);
    });
    clip.addEventListener("timeupdate", () => {
      if (!clip.paused && clip.currentTime >= end) clip.pause();
    });
  });
  players.forEach((player) =>
    player.addEventListener("play", () => players.forEach((other) => other !== player && other.pause())),
  );
}

document.addEventListener("click", (event) => {
  const button = event.target.closest("button");
  if (!button) return;
  if (button.dataset.preview !== undefined) {
    event.preventDefault();
    preview(button);
  } else if (button.dataset.seek !== undefined) {
    const player = document.querySelector(button.dataset.player);
    if (player) {
      player.currentTime = Number(button.dataset.seek);
      player.play().catch(() => {});
    }
  }
});

document.addEventListener("DOMContentLoaded", () => {
  const main = document.querySelector("main[data-events]");
  if (main) follow(main);
  document.querySelectorAll("[data-readalong]").forEach((box) => readAlong(box));
  excerpts();
});
