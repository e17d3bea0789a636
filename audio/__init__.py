"""bargein.audio"""
