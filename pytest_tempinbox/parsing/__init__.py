"""The MIME parser: a message's raw bytes to its fields, and the reading of them.

Standard library only and no I/O; it imports neither the server nor the client.
:mod:`.message` is the way in (:func:`~.message.parse_message`), with
:mod:`.fast` for the usual notification mail and the email package for the rest
(:mod:`.parts`, whose private names are all in :mod:`.email_internals`);
:mod:`.budget` is a parse's one clock; :mod:`.headers` and :mod:`.decode` read
header fields and text, :mod:`.html` and :mod:`.text_links` find links and visible
text, :mod:`.codes` (with :mod:`.code_context`, :mod:`.code_emphasis` and
:mod:`.code_words`) ranks one-time codes. What a test
says of a parsed message (:mod:`.links`, :mod:`.attachments`, :mod:`.match`,
:mod:`.failures`) is read here too, so the server's filters and the client's
assertions share one rule.
"""
