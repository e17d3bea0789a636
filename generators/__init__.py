"""bargein.generators"""
