"""The SMTP side: mail comes in here, and is delivered to the store.

:class:`~.service.SMTPService` listens; each connection starts in the fast
lane (:mod:`.fast_lane`), which hands the rare conversation over to aiosmtpd's
protocol (:mod:`.protocol`), and both read DATA alike (:mod:`.data`). The
handler (:mod:`.handler`) checks each recipient and delivers through the store's
protocol (:mod:`pytest_tempinbox.server.store.protocol`), never a store of its
own. The only wing that imports aiosmtpd; :mod:`._aiosmtpd` alone touches its
private parts.
"""
