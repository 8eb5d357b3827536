"""The field's newer faithfulness tests, one module per test (docs/field.md)."""
