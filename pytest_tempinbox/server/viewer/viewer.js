// The inbox viewer: reads one inbox through the API and follows its event stream.
//
// Everything that comes from a mail goes into the page as text (textContent, or
// attributes of elements made here), never as markup. A message's HTML is shown
// only in the sandboxed frame, whose document the server serves under its own
// Content-Security-Policy. No framework, no build step.
//
// On a server with tenants, every call to the API needs a token: the page asks for
// it once (a 401 shows the form), keeps it in sessionStorage (this tab only) and
// sends it as an Authorization header, never in a URL. EventSource cannot send a
// header, so the event stream is then read with fetch; the raw source and the
// attachments are fetched with the token too, and the HTML frame's URL carries a
// short-lived ticket of the inbox instead (GET /api/ticket/...).
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
  let transcriptShown = null; // the id of the message whose SMTP transcript is shown
  let checked = null; // the id of the message the Checks tab is about
  let htmlChecked = null; // the id of the message whose HTML check is shown or under way
  let gone = false;
  const TOKEN_KEY = "tempinbox-token";
  let token = window.sessionStorage.getItem(TOKEN_KEY);
  let askedForToken = false;

  const messageUrl = (id) => `api/messages/${inboxPath}/${encodeURIComponent(id)}`;
  const htmlUrl = (id, remoteImages) =>
    `viewer/messages/${inboxPath}/${encodeURIComponent(id)}/html` +
    (remoteImages ? "?images=remote" : "");

  // `code` is the problem document's code ("link_checks_off"), when the answer had one.
  class HttpError extends Error {
    constructor(status, detail, code) {
      super(detail);
      this.status = status;
      this.code = code || null;
    }
  }

  // fetch with the tab's token, if any; a 401 brings the token form back.
  async function apiFetch(url, options = {}) {
    const headers = { ...(options.headers || {}) };
    if (token) headers.Authorization = `Bearer ${token}`;
    const response = await fetch(url, { cache: "no-store", ...options, headers });
    if (response.status === 401) {
      askForToken(token ? "That token was refused: type it again, or another one." : null);
      throw new HttpError(401, "this server asks for a token", "unauthorized");
    }
    return response;
  }

  async function getJson(url) {
    const response = await apiFetch(url, { headers: { Accept: "application/json" } });
    if (!response.ok) {
      let detail = `${response.status} ${response.statusText}`;
      let code = null;
      try {
        const problem = await response.json();
        detail = problem.detail || detail;
        code = problem.code;
      } catch {
        // not a problem document: keep the status line
      }
      throw new HttpError(response.status, detail, code);
    }
    return response.json();
  }

  function element(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  // The providers whose APIs the server answers, as they write their names.
  const PROVIDER_NAMES = new Map([
    ["ses", "Amazon SES"],
    ["sendgrid", "SendGrid"],
    ["mailgun", "Mailgun"],
    ["postmark", "Postmark"],
    ["resend", "Resend"],
    ["brevo", "Brevo"],
  ]);
  // The provider whose API the mail came through; "" for mail that came by SMTP.
  const formatProvider = (provider) => (provider ? PROVIDER_NAMES.get(provider.name) || provider.name : "");

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
    const provider = formatProvider(message.provider);
    if (provider) button.append(element("span", `via ${provider}`, "meta via"));
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

  // --- the token, on a server with tenants ------------------------------------------

  function askForToken(note) {
    if (askedForToken) return;
    askedForToken = true;
    token = null;
    window.sessionStorage.removeItem(TOKEN_KEY);
    if (source) source.close();
    $("list-pane").hidden = true;
    $("message").hidden = true;
    $("inboxes-pane").hidden = true;
    $("token-form").hidden = false;
    const asking = "This server asks for an API token: type yours to see your inboxes.";
    setStatus(note || asking, note ? "warning" : "");
    $("token").focus();
  }

  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const given = $("token").value.trim();
    if (!given) return;
    window.sessionStorage.setItem(TOKEN_KEY, given);
    window.location.reload(); // the same URL: the token stays out of it
  });

  // Without an address: the tenant's inboxes, on a server with tenants (404 without).
  async function listInboxes() {
    let listed;
    try {
      listed = (await getJson("api/inboxes")).inboxes;
    } catch (error) {
      if (error.status !== 401) $("inbox").focus(); // 404: an open server lists nothing
      return;
    }
    const list = $("inboxes");
    for (const inbox of listed) {
      const link = element("a", inbox.email);
      link.href = `?inbox=${encodeURIComponent(inbox.email)}`;
      const item = element("li");
      item.append(link, element("span", ` ${plural(inbox.messages, "message")}`, "meta"));
      list.append(item);
    }
    $("inbox-count").textContent = `(${listed.length})`;
    $("no-inboxes").hidden = listed.length > 0;
    $("inboxes-pane").hidden = false;
    setStatus("Pick one of your inboxes, or type an address.");
  }

  // --- following the inbox ----------------------------------------------------------

  async function start() {
    $("inbox").value = address;
    if (!address) {
      $("inbox").focus();
      listInboxes();
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

  const watching = () => setStatus(`Watching ${address}: new mail appears here as it arrives.`, "live");
  const streamed = {
    message(data) {
      const summary = JSON.parse(data);
      // A reconnected stream may repeat what was already seen.
      if (!messages.has(summary.id)) fetchNew(summary.id);
    },
    deleted() {
      showGone(`The inbox ${address} is gone: it was deleted or it expired.`);
    },
  };

  function follow(after) {
    if (token) {
      followWithToken(after);
      return;
    }
    const query = after ? `?after=${encodeURIComponent(after)}` : "";
    source = new EventSource(`api/events/${inboxPath}${query}`);
    source.addEventListener("open", watching);
    source.addEventListener("message", (event) => streamed.message(event.data));
    source.addEventListener("deleted", () => streamed.deleted());
    source.addEventListener("error", () => {
      if (gone) return;
      if (source.readyState === EventSource.CLOSED) checkInbox();
      else setStatus("Lost the connection to the server; reconnecting…", "warning");
    });
  }

  // The event stream read with fetch, to send the token in a header: what EventSource
  // does (events by name, Last-Event-ID on reconnecting), for this stream's events.
  function followWithToken(after) {
    let lastId = after;
    let controller = null;
    source = { close: () => controller && controller.abort() };
    const retry = () => {
      if (gone || askedForToken) return;
      setStatus("Lost the connection to the server; reconnecting…", "warning");
      window.setTimeout(connect, 1000);
    };
    const dispatch = (block) => {
      let name = "message";
      const data = [];
      for (const line of block.split(/\r?\n/)) {
        if (!line || line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") name = value;
        else if (field === "data") data.push(value);
        else if (field === "id") lastId = value;
      }
      if (data.length && Object.hasOwn(streamed, name)) streamed[name](data.join("\n"));
    };
    async function connect() {
      if (gone || askedForToken) return;
      controller = new AbortController();
      const headers = { Accept: "text/event-stream" };
      if (lastId) headers["Last-Event-ID"] = lastId;
      let response;
      try {
        response = await apiFetch(`api/events/${inboxPath}`, { headers, signal: controller.signal });
      } catch (error) {
        if (error.status !== 401 && error.name !== "AbortError") retry();
        return;
      }
      if (!response.ok) {
        checkInbox();
        return;
      }
      watching();
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let end;
          while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
            dispatch(block);
          }
        }
      } catch (error) {
        if (error.name === "AbortError") return;
      }
      retry();
    }
    connect();
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

    showHtml(message);
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
    $("transcript").textContent = "";
    transcriptShown = null;
    showChecks(message);

    tab("html").hidden = message.html === null;
    tab("text").hidden = message.text === null;
    const available = availableTabs();
    const focused = $("tabs").contains(document.activeElement);
    selectTab(available.includes(chosenTab) ? chosenTab : available[0], false);
    if (focused) tab(selectedTab()).focus();
  }

  // A frame loads its document by URL and cannot send the token: with one, its URL
  // carries a short-lived ticket for this inbox (GET /api/ticket/...), never the token.
  let ticket = null; // { text, until }
  async function frameUrl(id, remoteImages) {
    const url = htmlUrl(id, remoteImages);
    if (!token) return url;
    if (!ticket || ticket.until < Date.now()) {
      const made = await getJson(`api/ticket/${inboxPath}`);
      // Renewed 15 seconds before it expires, whatever the two clocks say.
      ticket = { text: made.ticket, until: Date.now() + 45000 };
    }
    return `${url}${url.includes("?") ? "&" : "?"}ticket=${encodeURIComponent(ticket.text)}`;
  }

  async function showHtml(message, remoteImages = false) {
    const frame = $("html-frame");
    if (message.html === null) {
      frame.src = "about:blank";
      return;
    }
    try {
      const url = await frameUrl(message.id, remoteImages);
      if (current === message.id) frame.src = url;
    } catch {
      // the inbox went (its own event says so), or the token was refused (the form is back)
    }
  }

  // A link to a part of the message (raw source, attachment): with a token, fetched
  // with it and saved from memory, since a link cannot send a header.
  function downloadLink(link) {
    link.addEventListener("click", async (event) => {
      if (!token) return;
      event.preventDefault();
      try {
        const response = await apiFetch(link.href);
        if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
        const disposition = response.headers.get("content-disposition") || "";
        const named = /filename="?([^";]+)"?/i.exec(disposition);
        const save = element("a");
        save.href = URL.createObjectURL(await response.blob());
        save.download = link.download || (named ? named[1] : "download");
        save.click();
        window.setTimeout(() => URL.revokeObjectURL(save.href), 10000);
      } catch (error) {
        if (error.status !== 401) setStatus(`Could not download: ${error.message}`, "warning");
      }
    });
  }
  downloadLink($("raw-download"));

  function showSummary(message) {
    const mailFrom = message.envelope ? message.envelope.mail_from : null;
    const differs =
      message.from && mailFrom !== null && mailFrom.toLowerCase() !== message.from.email.toLowerCase();
    const provider = formatProvider(message.provider);
    const rows = [
      ["From", formatSender(message)],
      ["Envelope from", differs ? mailFrom || "<> (null sender)" : ""],
      ["To", formatAddresses(message.to)],
      ["Cc", formatAddresses(message.cc)],
      ["Reply-To", formatAddresses(message.reply_to)],
      ["Date", message.date ? formatTime(message.date) : ""],
      ["Received", formatTime(message.received_at)],
      ["Via", provider && `${provider}'s API`],
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
      downloadLink(link);
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
      const response = await apiFetch(`${messageUrl(id)}/raw`);
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

  // The SMTP transcript is fetched when its tab is shown, once per message: "C:" and
  // "S:" lines with their offsets in ms, or the server's reason when it keeps none.
  async function loadTranscript() {
    const id = current;
    if (panel("transcript").hidden || id === null || transcriptShown === id) return;
    transcriptShown = id;
    $("transcript").textContent = "Loading…";
    try {
      const response = await apiFetch(`${messageUrl(id)}/transcript`);
      const body = await response.json();
      if (current !== id) return;
      if (!response.ok) {
        $("transcript").textContent = body.detail || `${response.status} ${response.statusText}`;
        return;
      }
      const facts = [`client ${body.client.address ?? "?"}`, `EHLO ${body.client.ehlo ?? "-"}`];
      if (body.tls) facts.push(`${body.tls.version} ${body.tls.cipher}`);
      if (body.auth) facts.push(`AUTH ${body.auth.mechanism} ${body.auth.username ?? ""}`);
      const lines = body.lines.map(
        (line) => `${line.at_ms.toFixed(3).padStart(10)} ms  ${line.from === "client" ? "C" : "S"}: ${line.line}`,
      );
      $("transcript").textContent = [facts.join(" · "), `started ${body.started_at}`, "", ...lines].join("\n");
    } catch (error) {
      if (current === id) {
        $("transcript").textContent = `Could not load the transcript: ${error.message}`;
        transcriptShown = null;
      }
    }
  }

  // --- the checks: how the mail will meet its recipients ------------------------------
  //
  // The HTML check is fetched when the tab is shown, once per message; the link and
  // spam checks cost the server requests or a SpamAssassin run, so they wait for their
  // button. An answer that arrives after the reader moved on to another message is
  // dropped. DKIM and unsubscribe come with the message itself.

  const checkUrl = (id, name) => `${messageUrl(id)}/${name}-check`;
  const decimal = (value) => String(Math.round(value * 10) / 10);
  const plural = (count, word) => `${count} ${word}${count === 1 ? "" : "s"}`;

  // A link that leaves the viewer: only http(s), in a new window that cannot reach back.
  function outLink(url, text) {
    if (!/^https?:\/\//i.test(url)) return element("span", text === undefined ? url : text);
    const anchor = element("a", text === undefined ? url : text);
    anchor.href = url;
    anchor.rel = "noopener noreferrer";
    anchor.target = "_blank";
    return anchor;
  }

  function row(cells) {
    const tr = element("tr");
    for (const cell of cells) {
      if (cell instanceof Node) {
        const td = element("td");
        td.append(cell);
        tr.append(td);
      } else {
        tr.append(element("td", cell));
      }
    }
    return tr;
  }

  function table(headings, rows) {
    const head = element("tr");
    for (const heading of headings) {
      const th = element("th", heading);
      th.scope = "col";
      head.append(th);
    }
    const thead = element("thead");
    thead.append(head);
    const tbody = element("tbody");
    tbody.append(...rows);
    const result = element("table");
    result.append(thead, tbody);
    return result;
  }

  function showChecks(message) {
    if (checked !== message.id) {
      checked = message.id;
      htmlChecked = null;
      $("html-check").replaceChildren();
      $("link-check").replaceChildren();
      $("spam-check").replaceChildren();
      for (const region of ["html-check", "link-check", "spam-check"]) {
        $(region).removeAttribute("aria-busy");
      }
      $("check-links").disabled = false;
      $("check-spam").disabled = false;
    }
    showSender(message);
  }

  async function loadHtmlCheck() {
    const id = current;
    if (panel("checks").hidden || id === null || htmlChecked === id) return;
    htmlChecked = id;
    const region = $("html-check");
    if (messages.get(id)?.html === null) {
      region.replaceChildren(element("p", "No HTML body.", "meta"));
      return;
    }
    region.replaceChildren(element("p", "Checking the HTML…", "meta"));
    region.setAttribute("aria-busy", "true");
    try {
      const report = await getJson(checkUrl(id, "html"));
      if (current === id) region.replaceChildren(...htmlReport(report));
    } catch (error) {
      if (current !== id) return;
      if (error.status === 404) {
        region.replaceChildren(element("p", "No HTML body.", "meta"));
      } else {
        region.replaceChildren(element("p", `Could not check the HTML: ${error.message}`, "warning"));
        htmlChecked = null;
      }
    } finally {
      region.removeAttribute("aria-busy");
    }
  }

  function htmlReport(report) {
    const score = element("p", null, "verdict");
    score.append(
      element("strong", `${decimal(report.score)}%`, report.score < 100 ? "score" : "score good"),
      ` supported, ${decimal(report.partial)}% in part, ${decimal(report.unsupported)}% not, ` +
        `across ${plural(report.clients.length, "email client")} (${report.source}).`,
    );
    const features = [...report.features].sort((a, b) => b.loss - a.loss);
    if (!features.length) {
      const used = Object.keys(report.used || {}).length;
      const all = {
        0: "It uses no feature that caniemail knows.",
        1: "Every client supports the one feature it uses.",
      }[used];
      return [score, element("p", all || `Every client supports all ${used} features it uses.`, "meta")];
    }
    const rows = features.map((feature) => {
      const title = element("span");
      title.append(outLink(feature.url, feature.title), element("span", ` ${feature.kind}`, "meta"));
      const lacking = element(
        "span",
        `${feature.unsupported.length} of ${feature.tested}` +
          (feature.partial.length ? `, ${feature.partial.length} in part` : ""),
      );
      const names = [...feature.unsupported, ...feature.partial.map((name) => `${name} (in part)`)];
      lacking.title = names.join(", ");
      const found = feature.found === 1 ? "once" : `${feature.found} times`;
      return row([title, `−${decimal(feature.loss)}`, lacking, found]);
    });
    return [score, table(["feature", "points lost", "platforms lacking it", "used"], rows)];
  }

  // Runs one of the server's checks of the message behind its button (the button is off
  // while it runs) and shows its report as `draw` draws it, or why it failed: the error's
  // own message for the code `plain` (it says what to do), else after `failure`.
  async function runCheck(button, region, waiting, { kind, plain, failure, draw }) {
    const id = current;
    if (id === null) return;
    button.disabled = true;
    region.setAttribute("aria-busy", "true");
    region.replaceChildren(element("p", waiting, "meta"));
    try {
      let report;
      try {
        report = await getJson(checkUrl(id, kind));
      } catch (error) {
        if (current !== id) return;
        const text = error.code === plain ? error.message : `${failure}: ${error.message}`;
        region.replaceChildren(element("p", text, "warning"));
        return;
      }
      if (current === id) region.replaceChildren(...draw(report));
    } finally {
      if (current === id) {
        button.disabled = false;
        region.removeAttribute("aria-busy");
      }
    }
  }

  function checkLinks() {
    return runCheck($("check-links"), $("link-check"), "Requesting each link…", {
      kind: "link",
      plain: "link_checks_off",
      failure: "Could not check the links",
      draw: linkReport,
    });
  }

  function linkReport(report) {
    const results = [...report.results].sort((a, b) => Number(a.ok) - Number(b.ok));
    const broken = results.filter((result) => !result.ok).length;
    const verdict = element(
      "p",
      `${plural(results.length, "link")} checked: ` + (broken ? `${broken} broken.` : "all work."),
      broken ? "verdict bad" : "verdict good",
    );
    const rows = results.map((result) => {
      const answer = result.error
        ? result.error
        : `${result.status}${result.method ? ` (${result.method})` : ""}`;
      const hops = element("ol", null, "hops");
      for (const hop of result.redirects || []) {
        const item = element("li", `${hop.status} → `);
        item.append(element("span", hop.location || "(no Location)"));
        hops.append(item);
      }
      const tr = row([
        element("span", result.ok ? "OK" : "Broken", result.ok ? "ok" : "broken"),
        outLink(result.url),
        answer,
        hops.children.length ? hops : element("span", "none", "meta"),
      ]);
      if (!result.ok) tr.className = "broken";
      return tr;
    });
    if (!results.length) verdict.textContent = "No http or https link to check.";
    const parts = [verdict];
    if (rows.length) parts.push(table(["result", "URL", "answer", "redirects"], rows));
    if ((report.skipped || []).length) {
      parts.push(element("p", `Not requested (not http or https): ${report.skipped.join(", ")}`, "meta"));
    }
    if ((report.ignored || []).length) {
      parts.push(element("p", `Ignored: ${report.ignored.join(", ")}`, "meta"));
    }
    return parts;
  }

  function checkSpam() {
    return runCheck($("check-spam"), $("spam-check"), "SpamAssassin is reading the message…", {
      kind: "spam",
      plain: "spamassassin_missing",
      failure: "Could not score the message",
      draw: spamReport,
    });
  }

  function spamReport(report) {
    const spam = report.score >= report.threshold;
    const verdict = element("p", null, "verdict");
    verdict.append(
      element("strong", decimal(report.score), spam ? "score bad" : "score good"),
      ` against a threshold of ${decimal(report.threshold)}: ` +
        (spam ? "SpamAssassin calls it spam." : "not spam.") +
        (report.version ? ` (SpamAssassin ${report.version})` : ""),
    );
    const rules = [...report.rules].sort((a, b) => b.score - a.score);
    if (!rules.length) return [verdict, element("p", "No rule fired.", "meta")];
    const rows = rules.map((rule) => row([rule.name, decimal(rule.score), rule.description]));
    return [verdict, table(["rule", "score", "description"], rows)];
  }

  // DKIM and unsubscribe, from the message's own JSON.
  function showSender(message) {
    const list = $("sender-check");
    list.replaceChildren();
    const add = (name, ...values) => {
      const dd = element("dd");
      dd.append(...values);
      list.append(element("dt", name), dd);
    };

    const dkim = message.dkim;
    if (!dkim) {
      add("DKIM", element("span", "not checked", "meta"));
    } else {
      const signer = [dkim.domain, dkim.selector && `selector ${dkim.selector}`].filter(Boolean).join(", ");
      const kind = { pass: "good", fail: "bad" }[dkim.result] || "";
      const result = element("strong", dkim.result, kind ? `score ${kind}` : "");
      add(
        "DKIM",
        result,
        dkim.result === "none" ? " (not signed)" : "",
        signer ? ` ${signer}` : "",
        dkim.reason ? element("span", ` ${dkim.reason}`, "meta") : "",
      );
    }

    const unsubscribe = message.unsubscribe;
    if (!unsubscribe) {
      add("Unsubscribe", element("span", "no List-Unsubscribe header", "meta"));
      return;
    }
    const targets = element("ul", null, "targets");
    for (const url of unsubscribe.http || []) {
      const item = element("li");
      item.append(outLink(url));
      targets.append(item);
    }
    for (const url of unsubscribe.mailto || []) targets.append(element("li", url));
    add("Unsubscribe", targets.children.length ? targets : element("span", "no target", "meta"));
    add(
      "One-click",
      unsubscribe.one_click ? "yes" : "no",
      unsubscribe.post ? element("span", ` List-Unsubscribe-Post: ${unsubscribe.post}`, "meta") : "",
    );
    if (unsubscribe.dkim_covers !== null && unsubscribe.dkim_covers !== undefined) {
      const covers = unsubscribe.dkim_covers ? "covers" : "does not cover";
      add("Signed headers", `The DKIM signature ${covers} both headers.`);
    }
    const problems = unsubscribe.problems || [];
    if (problems.length) {
      const items = element("ul", null, "problems");
      for (const problem of problems) items.append(element("li", problem));
      add("Problems", items);
    } else {
      add("Problems", element("span", "none", "meta"));
    }
  }

  // --- the tabs: one part of the message at a time ------------------------------------
  //
  // The WAI-ARIA tabs pattern: only the selected tab is in the Tab order; the arrow
  // keys, Home and End move between the tabs shown and select the one they reach.

  const TABS = ["html", "text", "links", "attachments", "checks", "headers", "source", "transcript"];
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
    if (part === "transcript") loadTranscript();
    if (part === "checks") loadHtmlCheck();
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
  $("check-links").addEventListener("click", checkLinks);
  $("check-spam").addEventListener("click", checkSpam);
  $("remote-images").addEventListener("click", () => {
    if (current === null) return;
    showHtml(messages.get(current) || { id: current, html: "" }, true);
    $("remote-images").disabled = true;
    $("images-state").textContent = "Remote images are allowed for this message.";
  });

  start();
})();
