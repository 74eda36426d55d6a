"""Helpers shared by test modules (test modules and conftests are never imported as libraries)."""
