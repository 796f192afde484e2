"""The words around a number that say whether it is a one-time code, in twelve languages.

Data for :mod:`pytest_tempinbox.parsing.code_context`, standard library only, no I/O.
Every word is lowercase. A trailing ``*`` makes it a stem, matched at the start of a
longer word (``code*``: "codes"); other words must end there ("pin", not
"pink"). Chinese and Japanese words are always stems: those languages do not
put spaces between words. Phrases keep one space where the text has white
space; a longer phrase wins over a word it starts with ("code postal" over
"code", "promo code" over "promo").
"""

from __future__ import annotations

import re

__all__ = [
    "CJK_UNITS",
    "CODE",
    "HOLDER",
    "IDENT",
    "MONEY",
    "PHONE",
    "PLACE",
    "PLACE_SUFFIXES",
    "POSTAL",
    "PROMO",
    "PUNCTUATION",
    "UNITS",
    "VOCABULARY",
    "word_of",
]

CODE = "code"  # says "code": the number after it (or before it) is likely the code
IDENT = "ident"  # an order, invoice, reference or ticket: the number labelled by it is not
HOLDER = "holder"  # an account, customer or request: only "account number 123" is not a code
MONEY = "money"  # a total or an amount
PHONE = "phone"
POSTAL = "postal"  # "zip", "PLZ": the number labelled by it is a postal code
PLACE = "place"  # a street: a 4-6 digit number after it, on its line or the next, is a postal code
PROMO = "promo"  # a coupon or voucher: a code, but not a one-time one

_WORDS = {
    CODE: [
        # English
        "code*|passcode*|otp|otps|totp|one-time|one time|pin|pins|token*|verification*|2fa|mfa",
        "temporary password|security key",
        # German
        "bestätigungscode*|sicherheitscode*|verifizierungscode*|verifikationscode*|anmeldecode*",
        "zugangscode*|einmalcode*|freischaltcode*|aktivierungscode*|prüfcode*|logincode*",
        "authentifizierungscode*|einmalpasswort*|einmalkennwort*|einmal-passwort*|tan|verifizierung*",
        # French
        "jeton*|vérification*|usage unique|mot de passe temporaire",
        # Spanish and Portuguese
        "código*|codigo*|clave*|verificación*|verificacion*|un solo uso|verificação*|verificacao*",
        "uso único|contraseña temporal|senha temporária",
        # Italian
        "codice*|codici|verifica*|monouso|usa e getta",
        # Dutch
        "verificatiecode*|beveiligingscode*|pincode*|toegangscode*|inlogcode*|bevestigingscode*",
        "eenmalige*|verificatie*|controlecode*",
        # Polish
        "kod|kodu|kodem|kody|weryfikac*|jednorazow*",
        # Russian
        "код|кода|коду|кодом|одноразов*|проверочн*|токен*|верификац*|пин",
        # Chinese
        "验证码|驗證碼|校验码|校驗碼|动态码|動態碼|确认码|確認碼|安全码|安全碼|认证码|認證碼",
        "动态密码|動態密碼|一次性密码|一次性密碼|激活码|激活碼|登录码|登錄碼|口令",
        # Japanese, and Korean in passing
        "コード|ワンタイム|認証番号|暗証番号|パスコード|인증번호|코드",
    ],
    IDENT: [
        "order*|invoice*|receipt*|reference*|ref|ticket*|case|booking*|reservation*|transaction*",
        "tracking*|shipment*|parcel*|serial*|licence*|license*|policy|claim*|id|ids|sku|item",
        "issue|confirmation number|customer number|account number|member number|membership*",
        "bestell*|rechnung*|referenz*|kundennummer*|kontonummer*|auftrag*|vorgang*|buchung*",
        "sendung*|vertrag*|mitgliedsnummer*",
        "commande*|facture*|référence*|billet*|dossier*|réservation*|numéro de compte",
        "numéro client|numéro de client",
        "pedido*|orden*|factura*|referencia*|boleto*|reserva*|transacción*|expediente*",
        "número de cuenta|número de cliente|encomenda*|fatura*|referência*|bilhete*|chamado*",
        "protocolo*|transação*|número da conta|número do cliente",
        "ordine*|fattura*|riferimento*|biglietto*|pratica*|prenotazione*|transazione*",
        "numero di conto|numero cliente",
        "bestelling*|bestelnummer*|ordernummer*|factuur*|referentie*|klantnummer*",
        "rekeningnummer*|boeking*|reservering*|transactie*",
        "zamówieni*|zamowieni*|faktur*|referencj*|numer konta|numer klienta|bilet*|zgłoszeni*",
        "rezerwacj*|transakcj*",
        "заказ*|счет*|счёт*|билет*|обращени*|заявк*|бронировани*|транзакци*|договор*",
        "номер клиента|номер аккаунта",
        "订单|訂單|发票|發票|工单|工單|单号|單號|交易|参考号|參考號|预订|預訂|运单|運單",
        "注文|請求|領収|お客様番号|会員番号|問い合わせ|お問い合わせ|予約|取引|受付番号|伝票",
        # the registers and tax numbers of a footer
        "iban|bic|swift|vat|tax id|company number|registration number|reg|handelsregister*",
        "hrb|hra|ust-idnr|steuernummer|siret|siren|tva|rcs|nif|cif|nip|regon|krs|kvk|btw",
        "инн|огрн|кпп",
    ],
    HOLDER: [
        "account*|acct|customer*|client*|member|user|request",
        "konto*|kunde*|compte*|cuenta*|conta|conto|klant|rekening|klient*|аккаунт*|клиент*|учетн*",
        "учётн*|账户|賬戶|帳戶|账号|帳號|客户|客戶|会员|會員|アカウント|会員",
    ],
    MONEY: [
        "total*|subtotal*|amount*|price*|balance*|cost*|fee|fees|charge*|due|paid|payment*|sum",
        "betrag*|summe*|gesamt*|preis*|kosten*|gebühr*|montant*|prix|somme*|frais",
        "importe*|precio*|monto*|suma*|saldo*|cargo*|valor*|preço*|montante*",
        "importo*|prezzo*|totale*|costo*|bedrag*|totaal*|prijs*|kwota*|kwoty|razem|cena*|opłat*",
        "сумма*|сумму|итог*|цена*|стоимост*|баланс*|оплат*",
        "金额|金額|合计|合計|总计|總計|价格|價格|余额|餘額|费用|費用|価格|料金|残高|税込",
    ],
    PHONE: [
        "phone*|telephone*|tel|mobile|cell|fax|call|whatsapp|hotline|sms to",
        "telefon*|handy*|mobil|rufen|anrufen|téléphone*|tél|appelez|portable",
        "teléfono*|telefono*|llame|llámenos|móvil|celular|telefone*|ligue|telemóvel",
        "cellulare|chiamare|chiami|telefoon*|bel|mobiel|zadzwoń|komórk*",
        "телефон*|тел|звоните|电话|電話|手机|手機|热线|熱線|携帯",
    ],
    POSTAL: [
        "zip*|zip code|postal code|postcode*|post code|plz|postleitzahl*|code postal",
        "código postal|codigo postal|cep|codice postale|cap|kod pocztowy|почтовый индекс|индекс",
        "邮编|郵編|邮政编码|郵便番号|〒",
    ],
    PLACE: [
        "street*|st|st.|str.|avenue*|ave|ave.|road|rd|rd.|boulevard*|blvd|lane|suite|ste.|floor",
        "po box|p.o. box|straße*|strasse*|weg|platz*|allee|gasse|postfach",
        "rue|chemin|cedex|calle*|avenida*|av.|rua*|praça|viale|piazza*|corso",
        "straat*|laan|plein|gracht|ulica*|ul.|aleja|улица*|ул.|проспект*|丁目|番地",
    ],
    PROMO: [
        "promo*|promo code|coupon*|coupon code|voucher code|discount code|voucher*|gift card",
        "gift cards|gift code|referral code",
        "gutschein*|rabatt*|aktionscode*|code promo|code de réduction|código promocional",
        "cupón*|cupom*|codice sconto|codice promozionale|kortingscode*|kod rabatowy",
        "kod promocyjny|промокод*|优惠码|優惠碼|兑换码|兌換碼|クーポン",
    ],
}


PLACE_SUFFIXES = ("straße", "strasse", "str", "weg", "platz", "allee", "gasse", "straat", "laan")
"""How German and Dutch street names end: "Musterstraße", "Hauptstr.", "Kalverstraat"."""

# What the word after a number may say it counts: "15 minutes", "3 attempts", "10 EUR".
_UNITS = {
    "a duration": [
        "minute|minutes|min|mins|hour|hours|hr|hrs|h|second|seconds|sec|secs|ms|day|days",
        "week|weeks|month|months|year|years|minuten|stunde|stunden|sekunden|tag|tage|tagen",
        "wochen|uhr|heure|heures|secondes|jour|jours|semaines|minutos|horas|segundos|días|dias",
        "semanas|minuti|ore|secondi|giorni|uur|seconden|dagen|minut|minuty|godzin|godziny",
        "godzina|sekund|dni",
        "минут|минуты|мин|час|часа|часов|секунд|дней|дня",
    ],
    "a count": [
        "attempt|attempts|tries|times|users|people|members|items|points|credits|messages",
        "emails|requests|votes|views|followers|subscribers|downloads|files|pages|words",
        "characters|bytes|kb|mb|gb|tb|km|kg|steps|versuche|mal|nutzer|tentatives|fois",
        "intentos|veces|tentativas|vezes|tentativi|volte|pogingen|keer|prób|razy",
        "попыток|попытки|раз",
    ],
    "an amount": [
        "usd|eur|gbp|chf|pln|zł|zl|rub|brl|jpy|cny|sek|nok|dkk|czk|kč|euro|euros|dollars",
        "dollar|reais|rubles|złotych|%",
        "рублей|\u0440\u0443\u0431",  # and its abbreviation
    ],
}
UNITS = {word: why for why, lines in _UNITS.items() for line in lines for word in line.split("|")}
"""What a word right after a number makes of it: ``UNITS["minutes"] == "a duration"``."""
CJK_UNITS = {
    **dict.fromkeys("年月日时時分秒", "a date or a time"),
    **dict.fromkeys("元円圆", "an amount"),
    **dict.fromkeys("件个個回次人名位条", "a count"),
}
"""The same for a Chinese or Japanese character right after a number ("10分钟")."""

#: What is stripped from both ends of a white-space-separated token to get its word.
PUNCTUATION = (
    ".,;:!?()[]{}<>\"'«»“”„*#|/\\-_=+~\u2018\u2019\u2013\u2014"
    "\uff0c\u3002\u3001\uff1a\uff1b\uff01\uff1f\uff08\uff09「」『』【】"  # the same, full width
)


def word_of(token: str) -> str:
    """The lowercase word of a token: ``"(Code:"`` gives ``"code"``."""
    return token.strip(PUNCTUATION).lower()


def _unspaced(word: str) -> bool:
    # Chinese, Japanese and Korean are written without spaces between words.
    return word[0] >= "\u3000"


class _Vocabulary:
    """The words of every kind, indexed for a lookup of one token at a time."""

    def __init__(self) -> None:
        self.exact: dict[str, str] = {}  # word (or stem) -> kind
        self.stems: dict[str, list[str]] = {}  # first 3 letters -> stems, longest first
        self.phrases: dict[tuple[str, ...], str] = {}  # words -> kind
        # last word -> the lengths of the phrases ending in it, longest first: a phrase is
        # found at its last word ("zip code" at "code"), since the search goes backwards
        self.phrase_lengths: dict[str, list[int]] = {}
        unspaced: list[str] = []
        for kind, lines in _WORDS.items():
            for line in lines:
                for entry in line.split("|"):
                    self._add(entry, kind, unspaced)
        for stems in self.stems.values():
            stems.sort(key=len, reverse=True)
        for lengths in self.phrase_lengths.values():
            lengths.sort(reverse=True)
        # The first three letters of every word: most words of a text are none of these.
        self.prefixes = {word[:3] for word in (*self.exact, *self.phrase_lengths)}
        unspaced.sort(key=len, reverse=True)
        self._unspaced_words = unspaced
        self._unspaced_pattern: re.Pattern[str] | None = None

    @property
    def unspaced(self) -> re.Pattern[str]:
        """Finds the Chinese and Japanese words, longest first; compiled when first needed."""
        if self._unspaced_pattern is None:
            self._unspaced_pattern = re.compile("|".join(map(re.escape, self._unspaced_words)))
        return self._unspaced_pattern

    def _add(self, entry: str, kind: str, unspaced: list[str]) -> None:
        stem = entry.endswith("*")
        words = tuple(word_of(word) for word in entry.rstrip("*").split())
        if _unspaced(words[0]):
            unspaced.append(words[0])
            self.exact[words[0]] = kind
        elif len(words) > 1:
            self.phrases[words] = kind
            lengths = self.phrase_lengths.setdefault(words[-1], [])
            if len(words) not in lengths:
                lengths.append(len(words))
        else:
            self.exact[words[0]] = kind
            if stem:
                self.stems.setdefault(words[0][:3], []).append(words[0])


VOCABULARY = _Vocabulary()
