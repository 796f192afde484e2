// The inbox viewer: reads one inbox through the API and follows its event stream.
//
// Everything that comes from a mail goes into the page as text (textContent, or
// attributes of elements made here), never as markup. A message's HTML is shown
// only in the sandboxed frame, whose document the server serves under its own
// Content-Security-Policy. No framework, no build step.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const params = new URLSearchParams(window.location.search);
  const address = (params.get("inbox") || "").trim();
  const inboxPath = encodeURIComponent(address);
  // Every message known, by id: its object, or null while it is being fetched.
  const messages = new Map();
  let source = null;
  let current = null; // the id of the open message
  let rawShown = null; // the id of the message whose raw source is shown
  let gone = false;

  const messageUrl = (id) => `api/messages/${inboxPath}/${encodeURIComponent(id)}`;
  const htmlUrl = (id, remoteImages) =>
    `viewer/messages/${inboxPath}/${encodeURIComponent(id)}/html` +
    (remoteImages ? "?images=remote" : "");

  class HttpError extends Error {
    constructor(status, detail) {
      super(detail);
      this.status = status;
    }
  }

  async function getJson(url) {
    const response = await fetch(url, { cache: "no-store", headers: { Accept: "application/json" } });
    if (!response.ok) {
      let detail = `${response.status} ${response.statusText}`;
      try {
        detail = (await response.json()).detail || detail;
      } catch {
        // not a problem document: keep the status line
      }
      throw new HttpError(response.status, detail);
    }
    return response.json();
  }

  function element(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  const formatAddress = (a) => (a ? (a.name ? `${a.name} <${a.email}>` : a.email) : "");
  const formatAddresses = (list) => (list || []).map(formatAddress).join(", ");

  function formatTime(iso) {
    const date = new Date(iso);
    return Number.isNaN(date.getTime()) ? iso || "" : date.toLocaleString();
  }

  function formatSize(bytes) {
    if (bytes < 1024) return `${bytes} bytes`;
    if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
    return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  }

  function timeElement(iso) {
    const time = element("time", formatTime(iso));
    time.dateTime = iso;
    return time;
  }

  function setStatus(text, kind) {
    $("status").textContent = text;
    $("status").className = kind || "";
  }

  // --- the list, newest first -------------------------------------------------------

  function listItem(message) {
    const item = element("li");
    item.dataset.id = message.id;
    const button = element("button");
    button.type = "button";
    button.append(
      element("span", formatAddress(message.from) || "(no sender)", "from"),
      element("span", message.subject || "(no subject)", "subject"),
      timeElement(message.received_at),
    );
    const count = (message.attachments || []).length;
    if (count) button.append(element("span", `${count} attachment${count > 1 ? "s" : ""}`, "meta"));
    button.addEventListener("click", () => openMessage(message.id, true));
    item.append(button);
    return item;
  }

  function addToList(message) {
    const list = $("messages");
    // Ids sort by arrival: the new item goes before the first older one.
    const older = [...list.children].find((item) => item.dataset.id < message.id);
    list.insertBefore(listItem(message), older || null);
    updateCount();
  }

  function updateCount() {
    const count = $("messages").children.length;
    $("count").textContent = `(${count})`;
    $("empty").hidden = count > 0;
  }

  // --- following the inbox ----------------------------------------------------------

  async function start() {
    $("inbox").value = address;
    if (!address) {
      $("inbox").focus();
      return;
    }
    document.title = `${address} - tempinbox`;
    setStatus(`Opening ${address}…`);
    let list;
    try {
      list = await getJson(`api/messages/${inboxPath}`);
    } catch (error) {
      if (error.status === 404) {
        showGone(`No inbox ${address} here: it was never generated, or it was deleted or expired.`);
      } else {
        setStatus(`Cannot open ${address}: ${error.message}`, "warning");
      }
      return;
    }
    $("list-pane").hidden = false;
    for (const message of list) {
      messages.set(message.id, message);
      addToList(message);
    }
    updateCount();
    follow(list.length ? list[list.length - 1].id : null);
    const wanted = params.get("message");
    if (wanted && messages.has(wanted)) openMessage(wanted, false);
  }

  function follow(after) {
    const query = after ? `?after=${encodeURIComponent(after)}` : "";
    source = new EventSource(`api/events/${inboxPath}${query}`);
    source.addEventListener("open", () => {
      setStatus(`Watching ${address}: new mail appears here as it arrives.`, "live");
    });
    source.addEventListener("message", (event) => {
      const summary = JSON.parse(event.data);
      // A reconnected stream may repeat what was already seen.
      if (!messages.has(summary.id)) fetchNew(summary.id);
    });
    source.addEventListener("deleted", () => {
      showGone(`The inbox ${address} is gone: it was deleted or it expired.`);
    });
    source.addEventListener("error", () => {
      if (gone) return;
      if (source.readyState === EventSource.CLOSED) checkInbox();
      else setStatus("Lost the connection to the server; reconnecting…", "warning");
    });
  }

  async function fetchNew(id) {
    messages.set(id, null);
    try {
      const message = await getJson(messageUrl(id));
      messages.set(id, message);
      addToList(message);
    } catch {
      messages.delete(id); // evicted, or the inbox went: its own event says so
    }
  }

  // The stream was refused or ended for good: tell a deleted inbox from other causes.
  async function checkInbox() {
    try {
      await getJson(`api/messages/${inboxPath}`);
      setStatus("Live updates stopped: reload the page to see new mail.", "warning");
    } catch (error) {
      if (error.status === 404) showGone(`The inbox ${address} is gone: it was deleted or it expired.`);
      else setStatus(`Live updates stopped: ${error.message}`, "warning");
    }
  }

  function showGone(text) {
    gone = true;
    if (source) source.close();
    setStatus(text, "gone");
    document.body.classList.add("gone");
  }

  // --- one message ------------------------------------------------------------------

  async function openMessage(id, moveFocus) {
    let message = messages.get(id);
    if (!message) {
      try {
        message = await getJson(messageUrl(id));
      } catch (error) {
        setStatus(`Cannot open the message: ${error.message}`, "warning");
        return;
      }
    }
    current = id;
    for (const item of $("messages").children) {
      const button = item.firstElementChild;
      if (item.dataset.id === id) button.setAttribute("aria-current", "true");
      else button.removeAttribute("aria-current");
    }
    show(message);
    params.set("message", id);
    window.history.replaceState(null, "", `?${params}`);
    if (moveFocus) $("subject").focus();
  }

  function show(message) {
    $("message").hidden = false;
    $("subject").textContent = message.subject || "(no subject)";
    showSummary(message);

    $("html-part").hidden = message.html === null;
    $("html-frame").src = message.html === null ? "about:blank" : htmlUrl(message.id, false);
    $("remote-images").disabled = false;
    $("images-state").textContent = "Remote images are blocked.";

    $("text-part").hidden = message.text === null;
    $("text").textContent = message.text || "";

    showAttachments(message);
    showLinks(message);
    showHeaders(message);

    $("raw-download").href = `${messageUrl(message.id)}/raw`;
    $("raw-download").download = `${message.id}.eml`;
    $("raw").textContent = "";
    rawShown = null;
    loadRaw();
  }

  function showSummary(message) {
    const rows = [
      ["From", formatAddress(message.from)],
      ["To", formatAddresses(message.to)],
      ["Cc", formatAddresses(message.cc)],
      ["Reply-To", formatAddresses(message.reply_to)],
      ["Date", message.date ? formatTime(message.date) : ""],
      ["Received", formatTime(message.received_at)],
      ["Size", formatSize(message.size)],
    ];
    $("summary").replaceChildren();
    for (const [name, value] of rows) {
      if (value) $("summary").append(element("dt", name), element("dd", value));
    }
  }

  function showAttachments(message) {
    const list = $("attachments");
    list.replaceChildren();
    for (const attachment of message.attachments) {
      const link = element("a", attachment.filename || `attachment-${attachment.index}`);
      link.href = `${messageUrl(message.id)}/attachments/${attachment.index}`;
      link.download = ""; // the server's Content-Disposition names the file
      const about = [attachment.content_type, formatSize(attachment.size)];
      if (attachment.inline) about.push("inline");
      const item = element("li");
      item.append(link, element("span", ` ${about.join(", ")}`, "meta"));
      list.append(item);
    }
    $("attachments-part").hidden = message.attachments.length === 0;
    $("attachments-part").firstElementChild.textContent =
      `Attachments (${message.attachments.length})`;
  }

  function showLinks(message) {
    const list = $("links");
    list.replaceChildren();
    const links = message.links.filter((url) => /^https?:\/\//i.test(url));
    for (const url of links) {
      const link = element("a", url);
      link.href = url;
      link.rel = "noopener noreferrer";
      link.target = "_blank";
      const item = element("li");
      item.append(link);
      list.append(item);
    }
    $("links-part").hidden = links.length === 0;
    $("links-part").firstElementChild.textContent = `Links (${links.length})`;
  }

  function showHeaders(message) {
    const rows = $("headers");
    rows.replaceChildren();
    for (const [name, values] of Object.entries(message.headers)) {
      for (const value of values) {
        const row = element("tr");
        const cell = element("th", name);
        cell.scope = "row";
        row.append(cell, element("td", value));
        rows.append(row);
      }
    }
  }

  // The raw source is fetched when its section is open, once per message.
  async function loadRaw() {
    const id = current;
    if (!$("raw-part").open || id === null || rawShown === id) return;
    rawShown = id;
    $("raw").textContent = "Loading…";
    try {
      const response = await fetch(`${messageUrl(id)}/raw`, { cache: "no-store" });
      if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
      const text = await response.text();
      if (current === id) $("raw").textContent = text;
    } catch (error) {
      if (current === id) {
        $("raw").textContent = `Could not load the raw source: ${error.message}`;
        rawShown = null;
      }
    }
  }

  $("raw-part").addEventListener("toggle", loadRaw);
  $("remote-images").addEventListener("click", () => {
    if (current === null) return;
    $("html-frame").src = htmlUrl(current, true);
    $("remote-images").disabled = true;
    $("images-state").textContent = "Remote images are allowed for this message.";
  });

  start();
})();
