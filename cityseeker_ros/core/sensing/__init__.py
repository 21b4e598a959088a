"""cityseeker_ros/core/sensing"""
