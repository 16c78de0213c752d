"""The operator's page (synopsis serve's /ui/ and synopsis ui)."""
