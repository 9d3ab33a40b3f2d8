"""dpbandits.audits"""
