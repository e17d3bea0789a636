"""bargein.releases"""
