"""memstrata.write"""
