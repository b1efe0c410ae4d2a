"""Thesis ch. 5: representation transfer from pre-trained linear regression models (Table 5.1).
"""
