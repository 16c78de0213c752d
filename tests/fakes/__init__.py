"""Test doubles that speak a provider's wire protocol, for driving the real SDKs offline."""
