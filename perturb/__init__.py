"""bargein.perturb"""
