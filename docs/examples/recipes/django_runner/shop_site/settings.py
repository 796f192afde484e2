"""Settings of the shop: just enough Django to send mail, with production's TLS."""

SECRET_KEY = "only-for-the-recipe"
INSTALLED_APPS: list[str] = []
DATABASES: dict[str, dict[str, str]] = {}
USE_TZ = True

# Production mail settings: STARTTLS on the submission port.
EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
EMAIL_HOST = "smtp.example.com"
EMAIL_PORT = 587
EMAIL_USE_TLS = True
DEFAULT_FROM_EMAIL = "orders@shop.test"
