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
  // True once the reader picked a message (a click, or ?message= in the URL): new
  // mail then only joins the list. Until then the newest message is the open one.
  let picked = false;
  let chosenTab = null; // the part the reader last chose, kept from message to message
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

  // The From header, else the SMTP sender (MAIL FROM), marked as such; "" is the null sender <>.
  function formatSender(message) {
    if (message.from) return formatAddress(message.from);
    const envelope = message.envelope;
    if (!envelope) return "(no sender)";
    return envelope.mail_from ? `${envelope.mail_from} (envelope)` : "<> (null sender)";
  }

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
      element("span", formatSender(message), "from"),
      element("span", message.subject || "(no subject)", "subject"),
      timeElement(message.received_at),
    );
    const count = (message.attachments || []).length;
    if (count) button.append(element("span", `${count} attachment${count > 1 ? "s" : ""}`, "meta"));
    button.addEventListener("click", () => {
      picked = true;
      openMessage(message.id, true);
    });
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

  const newestId = () => $("messages").firstElementChild?.dataset.id;

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
    if (wanted && messages.has(wanted)) {
      picked = true;
      openMessage(wanted, false);
      $("messages").querySelector("[aria-current]").scrollIntoView({ block: "nearest" });
    } else if (list.length) {
      openMessage(list[list.length - 1].id, false);
    }
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
      if (!picked && !gone && newestId() === id) openMessage(id, false);
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

  // Only a message the reader picked goes into the URL: a reload of a page that
  // followed the newest message goes on following it.
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
    if (picked) params.set("message", id);
    else params.delete("message");
    window.history.replaceState(null, "", `?${params}`);
    if (moveFocus) $("subject").focus();
  }

  function show(message) {
    $("message").hidden = false;
    $("subject").textContent = message.subject || "(no subject)";
    showSummary(message);

    $("html-frame").src = message.html === null ? "about:blank" : htmlUrl(message.id, false);
    $("remote-images").disabled = false;
    $("images-state").textContent = "Remote images are blocked.";
    $("text").textContent = message.text || "";
    showLinks(message);
    showAttachments(message);
    showHeaders(message);

    $("raw-download").href = `${messageUrl(message.id)}/raw`;
    $("raw-download").download = `${message.id}.eml`;
    $("raw").textContent = "";
    rawShown = null;

    tab("html").hidden = message.html === null;
    tab("text").hidden = message.text === null;
    const available = availableTabs();
    const focused = $("tabs").contains(document.activeElement);
    selectTab(available.includes(chosenTab) ? chosenTab : available[0], false);
    if (focused) tab(selectedTab()).focus();
  }

  function showSummary(message) {
    const mailFrom = message.envelope ? message.envelope.mail_from : null;
    const differs =
      message.from && mailFrom !== null && mailFrom.toLowerCase() !== message.from.email.toLowerCase();
    const rows = [
      ["From", formatSender(message)],
      ["Envelope from", differs ? mailFrom || "<> (null sender)" : ""],
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

  // A tab of a part the message lacks is hidden, its label counts what it holds.
  function setCount(part, label, count) {
    tab(part).hidden = count === 0;
    tab(part).textContent = `${label} (${count})`;
  }

  function showAttachments(message) {
    const rows = $("attachments");
    rows.replaceChildren();
    for (const attachment of message.attachments) {
      const link = element("a", attachment.filename || `attachment-${attachment.index}`);
      link.href = `${messageUrl(message.id)}/attachments/${attachment.index}`;
      link.download = ""; // the server's Content-Disposition names the file
      const name = element("td");
      name.append(link);
      if (attachment.inline) name.append(element("span", " inline", "meta"));
      const row = element("tr");
      row.append(name, element("td", attachment.content_type), element("td", formatSize(attachment.size)));
      rows.append(row);
    }
    setCount("attachments", "Attachments", message.attachments.length);
  }

  function showLinks(message) {
    const rows = $("links");
    rows.replaceChildren();
    const links = (message.link_details || []).length
      ? message.link_details
      : (message.links || []).map((url) => ({ url, text: null, source: "" }));
    for (const link of links) {
      const url = element("td");
      if (/^https?:\/\//i.test(link.url)) {
        const anchor = element("a", link.url);
        anchor.href = link.url;
        anchor.rel = "noopener noreferrer";
        anchor.target = "_blank";
        url.append(anchor);
      } else {
        url.textContent = link.url; // mailto:, tel: and the like: shown, not followed
      }
      const text = link.text ? element("td", link.text) : element("td", "(none)", "meta");
      const row = element("tr");
      row.append(text, url, element("td", link.source));
      rows.append(row);
    }
    setCount("links", "Links", links.length);
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

  // The raw source is fetched when its tab is shown, once per message.
  async function loadRaw() {
    const id = current;
    if (panel("source").hidden || id === null || rawShown === id) return;
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

  // --- the tabs: one part of the message at a time ------------------------------------
  //
  // The WAI-ARIA tabs pattern: only the selected tab is in the Tab order; the arrow
  // keys, Home and End move between the tabs shown and select the one they reach.

  const TABS = ["html", "text", "links", "attachments", "headers", "source"];
  const tab = (part) => $(`tab-${part}`);
  const panel = (part) => $(`panel-${part}`);
  const availableTabs = () => TABS.filter((part) => !tab(part).hidden);
  const selectedTab = () => TABS.find((part) => !panel(part).hidden);

  // `byReader`: the reader chose it, so later messages open on it too when they have it.
  function selectTab(part, byReader) {
    for (const other of TABS) {
      const selected = other === part;
      tab(other).setAttribute("aria-selected", String(selected));
      tab(other).tabIndex = selected ? 0 : -1;
      panel(other).hidden = !selected;
    }
    if (byReader) chosenTab = part;
    if (part === "source") loadRaw();
  }

  for (const part of TABS) tab(part).addEventListener("click", () => selectTab(part, true));
  $("tabs").addEventListener("keydown", (event) => {
    const available = availableTabs();
    const at = available.indexOf(event.target.dataset.part);
    if (at < 0) return;
    const moves = {
      ArrowRight: at + 1,
      ArrowLeft: at - 1 + available.length,
      Home: 0,
      End: available.length - 1,
    };
    if (!(event.key in moves)) return;
    event.preventDefault();
    const part = available[moves[event.key] % available.length];
    selectTab(part, true);
    tab(part).focus();
  });
  $("remote-images").addEventListener("click", () => {
    if (current === null) return;
    $("html-frame").src = htmlUrl(current, true);
    $("remote-images").disabled = true;
    $("images-state").textContent = "Remote images are allowed for this message.";
  });

  start();
})();
