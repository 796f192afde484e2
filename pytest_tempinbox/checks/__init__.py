"""Checks of a message as its recipients will meet it: HTML support, links, unsubscribe, spam, DKIM.

Each module takes what it checks (a message's HTML, its links, its headers,
its raw bytes) and returns a report with its JSON form; the client's
:class:`~pytest_tempinbox.models.Message` and the server's routes both call
them, so a check answers alike in-process and over HTTP. Standard library and
the parser only at import time; what a check needs beyond them (an HTTP
client, dkimpy, the ``spamassassin`` program) is imported or looked for when
the check runs.
"""
