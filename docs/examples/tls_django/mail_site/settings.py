"""Settings of the example site: just enough Django to send mail."""

SECRET_KEY = "only-for-the-example"
INSTALLED_APPS: list[str] = []
DATABASES: dict[str, dict[str, str]] = {}
USE_TZ = True

# Production mail settings; the tests point them at pytest-tempinbox.
EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
EMAIL_HOST = "smtp.example.com"
EMAIL_PORT = 587
EMAIL_USE_TLS = True
EMAIL_HOST_USER = "app"
EMAIL_HOST_PASSWORD = "from-the-vault"
DEFAULT_FROM_EMAIL = "orders@shop.test"
