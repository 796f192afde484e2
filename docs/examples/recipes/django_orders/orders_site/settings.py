"""Settings of the order site: Django 6.1's MAILERS, a mailer for each kind of mail."""

SECRET_KEY = "only-for-the-recipe"
INSTALLED_APPS: list[str] = []
DATABASES: dict[str, dict[str, str]] = {}
USE_TZ = True
DEFAULT_FROM_EMAIL = "orders@orders.test"

# Production mailers; the tests point "default" and "receipts" at pytest-tempinbox.
MAILERS = {
    # Order confirmations: the provider's submission port, over STARTTLS, logged in.
    "default": {
        "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "OPTIONS": {
            "host": "smtp.example.com",
            "port": 587,
            "use_tls": True,
            "username": "orders",
            "password": "from-the-environment-in-production",
        },
    },
    # Receipts: the accounting relay, over SMTPS (the SMTP backend is the default BACKEND).
    "receipts": {"OPTIONS": {"host": "relay.example.com", "port": 465, "use_ssl": True}},
    # The newsletter: the provider's HTTP API (django-anymail); the tests keep it as it is.
    "newsletter": {
        "BACKEND": "anymail.backends.postmark.EmailBackend",
        "OPTIONS": {"api_key": "from-the-environment-in-production"},
    },
}
