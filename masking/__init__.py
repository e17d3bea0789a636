"""bargein.masking"""
