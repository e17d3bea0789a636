"""bargein.verify"""
