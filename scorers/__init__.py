"""bargein.scorers"""
