"""Settings of the shop: just enough Django for a view that sends mail through Postmark."""

SECRET_KEY = "only-for-the-recipe"
ROOT_URLCONF = "shop.urls"
INSTALLED_APPS = ["anymail"]
USE_TZ = True

# --8<-- [start:settings]
# Production mail settings: Postmark's API through django-anymail, no SMTP.
EMAIL_BACKEND = "anymail.backends.postmark.EmailBackend"
ANYMAIL = {"POSTMARK_SERVER_TOKEN": "the-production-token"}
DEFAULT_FROM_EMAIL = "orders@shop.test"
# --8<-- [end:settings]
